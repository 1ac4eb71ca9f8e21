#include "import/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

namespace loupe::prof::import {

std::optional<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  void* data = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    data = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);  // the mapping keeps the file
  if (data == MAP_FAILED) return std::nullopt;
  ::madvise(data, size_t(st.st_size), MADV_SEQUENTIAL);
  return MappedFile(static_cast<const char*>(data), size_t(st.st_size));
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

void MappedFile::release_before(size_t offset) const {
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  size_t end = std::min(offset, size_) / page * page;
  if (end > 0) ::madvise(const_cast<char*>(data_), end, MADV_DONTNEED);
}

}  // namespace loupe::prof::import
