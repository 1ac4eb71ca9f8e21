#include "import/byte_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <isa-l/igzip_lib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "loupe/prof/import.h"
#include "loupe/prof/input_file.h"

namespace loupe::prof::import {

namespace {

class Fd {
 public:
  explicit Fd(const std::string& path) : path_(path), fd_(open_input_file_or_throw<ImportError>(path)) {
    struct stat st {};
    if (::fstat(fd_, &st) == 0) size_ = uint64_t(st.st_size);
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

// What an ISA-L error code means, for the message that names the byte.
const char* inflate_error(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid back-reference distance";
    case ISAL_INVALID_WRAPPER: return "invalid gzip or zlib header";
    case ISAL_UNSUPPORTED_METHOD: return "not deflate-compressed";
    case ISAL_INCORRECT_CHECKSUM: return "checksum mismatch (the data is damaged)";
    case ISAL_NEED_DICT: return "needs a preset dictionary";
    default: return "unknown error";  // an int from ISA-L: a code newer than this list
  }
}

// Inflates gzip (and zlib) data with ISA-L, whose inflate and CRC are
// several times faster than zlib's (bench/import_bench.cpp); the checksum
// of every member is verified. Concatenated gzip members are read one
// after the other, as gunzip does.
class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(const std::string& path) : fd_(path), in_(kInput) {
    // gzip's last four bytes: the uncompressed size, modulo 4 GiB. In a
    // file cut short they are whatever the cut left there; deflate never
    // inflates past 1032 times, so a size beyond that is no hint at all
    // (a reader would reserve gigabytes for a few bytes).
    uint8_t tail[4];
    if (fd_.size() >= 18 && ::pread(fd_.fd(), tail, 4, off_t(fd_.size() - 4)) == 4) {
      size_hint_ = uint64_t(tail[0]) | uint64_t(tail[1]) << 8 | uint64_t(tail[2]) << 16 | uint64_t(tail[3]) << 24;
      if (size_hint_ > 1032 * fd_.size()) size_hint_ = 0;
    }
    isal_inflate_init(&z_);
    member_ended_ = true;  // the first member starts at the first byte
  }

  size_t read(char* dst, size_t n) override {
    if (done_ || n == 0) return 0;
    z_.next_out = reinterpret_cast<uint8_t*>(dst);
    z_.avail_out = uint32_t(std::min<size_t>(n, 1u << 30));
    size_t want = z_.avail_out;
    while (z_.avail_out == want) {
      if (z_.avail_in == 0 && !refill()) {
        if (member_ended_) {  // the last member ended exactly at the end of the file
          done_ = true;
          break;
        }
        throw ImportError(
            fmt::format("{}: truncated gzip data: the compressed stream ends at byte {} before its end marker",
                        fd_.path(), fd_.offset()));
      }
      if (member_ended_) start_member();
      int rc = isal_inflate(&z_);
      if (rc < 0 || rc == ISAL_NEED_DICT) {
        throw ImportError(fmt::format("{}: corrupt gzip data at compressed byte {}: {}", fd_.path(), file_offset(),
                                      inflate_error(rc)));
      }
      member_ended_ = z_.block_state == ISAL_BLOCK_FINISH;
    }
    return want - z_.avail_out;
  }
  uint64_t file_offset() const override { return fd_.offset() - z_.avail_in; }
  bool compressed() const override { return true; }
  uint64_t size_hint() const override { return size_hint_; }

 private:
  static constexpr size_t kInput = size_t(1) << 18;

  bool refill() {
    size_t got = fd_.read(reinterpret_cast<char*>(in_.data()), in_.size());
    z_.next_in = in_.data();
    z_.avail_in = uint32_t(got);
    return got > 0;
  }

  // Another member (gzip) or the one stream (zlib, CMF byte 0x78) begins
  // at next_in; its wrapper is parsed and its checksum checked.
  void start_member() {
    isal_inflate_reset(&z_);
    z_.crc_flag = z_.next_in[0] == 0x1f ? ISAL_GZIP : ISAL_ZLIB;
    member_ended_ = false;
  }

  Fd fd_;
  std::vector<uint8_t> in_;
  inflate_state z_;
  bool member_ended_ = false;
  bool done_ = false;
  uint64_t size_hint_ = 0;
};

// Inflates on a thread of its own, a few chunks ahead of the reader, so
// that decompression overlaps scanning and parsing. Each chunk is copied
// once more, into the reader's buffer: cheap next to inflating it.
class PrefetchSource final : public ByteSource {
 public:
  explicit PrefetchSource(std::unique_ptr<ByteSource> inner) : inner_(std::move(inner)) {
    thread_ = std::thread([this] { produce(); });
  }
  ~PrefetchSource() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  size_t read(char* dst, size_t n) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !full_.empty() || done_; });
    if (full_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return 0;
    }
    Chunk& c = full_.front();
    size_t take = std::min(n, c.size - c.used);
    std::memcpy(dst, c.data.get() + c.used, take);
    c.used += take;
    if (c.used == c.size) {
      free_.push_back(std::move(c.data));
      full_.pop_front();
      cv_.notify_all();
    }
    return take;
  }
  uint64_t file_offset() const override { return inner_->file_offset(); }
  bool compressed() const override { return inner_->compressed(); }
  uint64_t size_hint() const override { return inner_->size_hint(); }

 private:
  static constexpr size_t kChunk = size_t(1) << 20, kChunks = 4;
  struct Chunk {
    std::unique_ptr<char[]> data;
    size_t size = 0, used = 0;
  };

  void produce() {
    try {
      for (;;) {
        std::unique_ptr<char[]> buf;
        {
          std::unique_lock lock(mu_);
          cv_.wait(lock, [&] { return stop_ || full_.size() < kChunks; });
          if (stop_) return;
          if (!free_.empty()) {
            buf = std::move(free_.back());
            free_.pop_back();
          }
        }
        if (!buf) buf.reset(new char[kChunk]);
        size_t got = 0;
        while (got < kChunk) {
          size_t r = inner_->read(buf.get() + got, kChunk - got);
          if (r == 0) break;
          got += r;
        }
        std::lock_guard lock(mu_);
        if (got > 0) full_.push_back({std::move(buf), got, 0});
        if (got < kChunk) {
          done_ = true;
          cv_.notify_all();
          return;
        }
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mu_);
      error_ = std::current_exception();
      done_ = true;
      cv_.notify_all();
    }
  }

  std::unique_ptr<ByteSource> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk> full_;
  std::vector<std::unique_ptr<char[]>> free_;
  bool stop_ = false, done_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once everything above exists
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

std::unique_ptr<ByteSource> open_byte_source(const std::string& path, bool prefetch) {
  std::string head = read_file_head(path, 2);
  bool gzip = head.size() == 2 && uint8_t(head[0]) == 0x1f && uint8_t(head[1]) == 0x8b;
  // A zlib stream: CMF byte 0x78 and a valid header check.
  bool zlib = head.size() == 2 && uint8_t(head[0]) == 0x78 && ((uint8_t(head[0]) << 8) | uint8_t(head[1])) % 31 == 0;
  if (!(gzip || zlib)) return std::make_unique<PlainSource>(path);
  auto source = std::make_unique<GzipSource>(path);
  if (prefetch && std::thread::hardware_concurrency() > 1) return std::make_unique<PrefetchSource>(std::move(source));
  return source;
}

}  // namespace loupe::prof::import
