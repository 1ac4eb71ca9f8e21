#include "import/byte_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "loupe/prof/import.h"

namespace loupe::prof::import {

namespace {

class Fd {
 public:
  explicit Fd(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ImportError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    struct stat st{};
    if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd_);
      throw ImportError(fmt::format("{}: is a directory, not a trace file", path));
    }
    size_ = uint64_t(st.st_size);
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  size_t read(char* dst, size_t n) {
    for (;;) {
      ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) {
        offset_ += uint64_t(got);
        return size_t(got);
      }
      if (errno != EINTR) throw ImportError(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
    }
  }
  uint64_t offset() const { return offset_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
};

class PlainSource final : public ByteSource {
 public:
  explicit PlainSource(const std::string& path) : fd_(path) {}
  size_t read(char* dst, size_t n) override { return fd_.read(dst, n); }
  uint64_t file_offset() const override { return fd_.offset(); }
  bool compressed() const override { return false; }
  uint64_t size_hint() const override { return fd_.size(); }

 private:
  Fd fd_;
};

// Inflates gzip (and zlib) data; concatenated gzip members are read one
// after the other, as gunzip does.
class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(const std::string& path) : fd_(path), in_(kInput) {
    // gzip's last four bytes: the uncompressed size, modulo 4 GiB.
    uint8_t tail[4];
    if (fd_.size() >= 18 && ::pread(fd_.fd(), tail, 4, off_t(fd_.size() - 4)) == 4) {
      size_hint_ = uint64_t(tail[0]) | uint64_t(tail[1]) << 8 | uint64_t(tail[2]) << 16 | uint64_t(tail[3]) << 24;
    }
    std::memset(&z_, 0, sizeof z_);
    if (inflateInit2(&z_, 15 + 32) != Z_OK) throw ImportError(fmt::format("{}: cannot start zlib", path));
  }
  ~GzipSource() override { inflateEnd(&z_); }

  size_t read(char* dst, size_t n) override {
    if (done_ || n == 0) return 0;
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = uInt(std::min<size_t>(n, 1u << 30));
    size_t want = z_.avail_out;
    while (z_.avail_out == want) {
      if (z_.avail_in == 0) {
        size_t got = fd_.read(reinterpret_cast<char*>(in_.data()), in_.size());
        if (got == 0) {
          if (stream_ended_) {  // the last member ended exactly at the end of the file
            done_ = true;
            break;
          }
          throw ImportError(fmt::format(
              "{}: truncated gzip data: the compressed stream ends at byte {} before its end marker", fd_.path(),
              fd_.offset()));
        }
        z_.next_in = in_.data();
        z_.avail_in = uInt(got);
      }
      if (stream_ended_) {
        // Another gzip member follows the one that ended.
        inflateReset(&z_);
        stream_ended_ = false;
      }
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        stream_ended_ = true;
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        uint64_t at = fd_.offset() - z_.avail_in;
        throw ImportError(fmt::format("{}: corrupt gzip data at compressed byte {}: {}", fd_.path(), at,
                                      z_.msg ? z_.msg : zError(rc)));
      }
    }
    return want - z_.avail_out;
  }
  uint64_t file_offset() const override { return fd_.offset() - z_.avail_in; }
  bool compressed() const override { return true; }
  uint64_t size_hint() const override { return size_hint_; }

 private:
  static constexpr size_t kInput = size_t(1) << 18;
  Fd fd_;
  std::vector<Bytef> in_;
  z_stream z_;
  bool stream_ended_ = false;
  bool done_ = false;
  uint64_t size_hint_ = 0;
};

}  // namespace

std::string read_file_head(const std::string& path, size_t n) {
  Fd fd(path);
  std::string head(n, '\0');
  size_t got = 0;
  while (got < n) {
    size_t r = fd.read(head.data() + got, n - got);
    if (r == 0) break;
    got += r;
  }
  head.resize(got);
  return head;
}

std::unique_ptr<ByteSource> open_byte_source(const std::string& path) {
  std::string head = read_file_head(path, 2);
  bool gzip = head.size() == 2 && uint8_t(head[0]) == 0x1f && uint8_t(head[1]) == 0x8b;
  // A zlib stream: CMF byte 0x78 and a valid header check.
  bool zlib = head.size() == 2 && uint8_t(head[0]) == 0x78 && ((uint8_t(head[0]) << 8) | uint8_t(head[1])) % 31 == 0;
  if (gzip || zlib) return std::make_unique<GzipSource>(path);
  return std::make_unique<PlainSource>(path);
}

}  // namespace loupe::prof::import
