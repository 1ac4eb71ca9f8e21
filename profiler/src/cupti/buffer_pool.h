// CUPTI's activity buffers, reused. CUPTI asks for a buffer whenever the
// one it fills is full or flushed, from its own threads; allocating and
// freeing 8 MiB each time costs page faults on every first touch, so
// completed buffers are kept, up to a few, and handed out again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace loupe::prof::cupti {

class BufferPool {
 public:
  static constexpr size_t kBufferBytes = size_t(8) << 20;
  // How many completed buffers are kept for reuse; more are freed.
  static constexpr size_t kKept = 4;

  // `reuse` false: every buffer is allocated and freed (LOUPE_CUPTI_BUFFER_POOL=0).
  explicit BufferPool(bool reuse) : reuse_(reuse) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of kBufferBytes, 8-byte aligned; nullptr when memory ran out.
  uint8_t* take();
  // A buffer CUPTI completed, after its records were read.
  void give_back(uint8_t* buffer);

  uint64_t allocated() const;  // buffers allocated since the process began
  uint64_t live() const;       // allocated and not freed: lent to CUPTI or kept

 private:
  const bool reuse_;
  mutable std::mutex mu_;
  std::vector<uint8_t*> kept_;
  uint64_t allocated_ = 0, freed_ = 0;
};

}  // namespace loupe::prof::cupti
