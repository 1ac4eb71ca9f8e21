#include "open/content_hash.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "loupe/prof/input_file.h"

namespace loupe::prof::open {

namespace {

// Four lanes of 64-bit multiply-rotate over 32-byte blocks: the lanes are
// independent, so the loop runs at memory speed (several GB/s), and the
// final mix spreads every input bit over the result.
constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t word(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
uint64_t round(uint64_t lane, uint64_t w) { return rotl(lane + w * kPrime2, 31) * kPrime1; }
uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

class Hasher {
 public:
  void add(const unsigned char* p, size_t n) {
    bytes_ += n;
    // Fill the pending block first, then whole blocks, then keep the rest.
    while (n > 0 && pending_ > 0) {
      block_[pending_++] = *p++;
      --n;
      if (pending_ == 32) {
        mix(block_);
        pending_ = 0;
      }
    }
    for (; n >= 32; p += 32, n -= 32) mix(p);
    std::memcpy(block_, p, n);
    pending_ = n;
  }
  uint64_t finish() const {
    uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
    for (uint64_t lane : lanes_) h = (h ^ round(0, lane)) * kPrime1 + kPrime3;
    h ^= bytes_;
    size_t i = 0;
    for (; i + 8 <= pending_; i += 8) h = rotl(h ^ round(0, word(block_ + i)), 27) * kPrime1 + kPrime3;
    for (; i < pending_; ++i) h = rotl(h ^ (block_[i] * kPrime3), 11) * kPrime1;
    return avalanche(h);
  }

 private:
  void mix(const unsigned char* p) {
    for (size_t k = 0; k < 4; ++k) lanes_[k] = round(lanes_[k], word(p + 8 * k));
  }
  uint64_t lanes_[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
  unsigned char block_[32] = {};
  size_t pending_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace

uint64_t hash_bytes(const void* data, size_t size) {
  Hasher h;
  h.add(static_cast<const unsigned char*>(data), size);
  return h.finish();
}

ContentHash hash_file(const std::string& path) {
  int fd = open_input_file(path);
  Hasher h;
  ContentHash result;
  std::vector<unsigned char> buffer(size_t(4) << 20);
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw FileError(fmt::format("{}: cannot read: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    h.add(buffer.data(), size_t(n));
    result.bytes += uint64_t(n);
  }
  ::close(fd);
  result.hash = h.finish();
  return result;
}

}  // namespace loupe::prof::open
