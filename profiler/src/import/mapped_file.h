// A file mapped read-only into memory, whose pages the reader lets go of
// once it has read past them, so that reading a file of 1 GB does not hold
// 1 GB resident (the pages come back from the page cache if read again).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace loupe::prof::import {

class MappedFile {
 public:
  // The file mapped; nullopt where it cannot be (not a regular file, empty,
  // or mmap refused), and the caller reads it another way.
  static std::optional<MappedFile> open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view bytes() const { return {data_, size_}; }
  // Gives the whole pages before `offset` back to the system.
  void release_before(size_t offset) const;

 private:
  MappedFile(const char* data, size_t size) : data_(data), size_(size) {}
  const char* data_;
  size_t size_;
};

}  // namespace loupe::prof::import
