// A caching device allocator in the manner of PyTorch's CUDA allocator:
// memory is reserved from the device in segments and carved into blocks;
// freed blocks stay cached for reuse by later requests on the same stream,
// split when larger than needed and coalesced with free neighbours.
//
// Sizes round up to 512 bytes. Requests up to 1 MiB come from 2 MiB
// segments (the small pool); larger ones from 20 MiB segments, or a
// segment of their own rounded to 2 MiB above 10 MiB. The reserved total
// never exceeds the capacity: a request that does not fit first gives the
// cache back to the device and retries, then raises OutOfMemory.
//
// Every decision is recorded as a memory event carrying the device's
// allocated and reserved bytes after it and the call site that asked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <source_location>
#include <string_view>
#include <vector>

#include "loupe/prof/record.h"
#include "loupe/rt/device.h"
#include "memory/device_memory.h"

namespace loupe::rt::mem {

struct Segment;

struct Block {
  char* ptr = nullptr;
  size_t size = 0;
  int stream = 0;  // the stream it was allocated for
  bool allocated = false;
  bool small = false;     // from the small pool
  Block* prev = nullptr;  // neighbours within the segment
  Block* next = nullptr;
  Segment* segment = nullptr;
  prof::CallSiteId site = prof::kNoCallSite;
  uint32_t other_streams = 0;  // bit s: also used on stream s
};

struct AllocRequest {
  size_t bytes = 0;
  int stream = 0;
  prof::CallSiteId site = prof::kNoCallSite;
  // For the OOM message: the op and the user's line that asked.
  const char* op = nullptr;
  const std::source_location* loc = nullptr;
};

class CachingAllocator {
 public:
  static constexpr size_t kRound = 512;
  static constexpr size_t kSmallRequest = 1 << 20;
  static constexpr size_t kSmallSegment = 2 << 20;
  static constexpr size_t kLargeSegment = 20 << 20;
  static constexpr size_t kMinLargeAlone = 10 << 20;
  static constexpr size_t kLargeRound = 2 << 20;

  // `trace_device` is the device id in the trace; `clock` may be null when
  // everything runs on one stream.
  CachingAllocator(Device device, uint32_t trace_device, DeviceMemory& memory, StreamClock* clock, int64_t capacity);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least req.bytes, or OutOfMemory.
  Block* allocate(const AllocRequest& req);
  // Returns a block to the cache (stream-ordered; see StreamClock).
  void free(Block* block);
  // Marks `block` as used by work on `stream` too, so that its free waits
  // for that stream.
  void record_use(Block* block, int stream);

  // Releases every cached segment that is entirely free.
  void empty_cache();
  void set_capacity(int64_t bytes);
  void reset_peak();
  MemoryStats stats() const;

  // The size a request is rounded to.
  static size_t round_size(size_t bytes);
  // The segment size reserved for a request of `rounded` bytes.
  static size_t segment_size(size_t rounded);

 private:
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BySize>;
  struct Deferred {
    Block* block;
    std::vector<std::pair<int, uint64_t>> marks;  // (stream, mark) to pass first
  };

  Block* find_free_locked(size_t size, int stream, bool small);
  Block* reserve_segment_locked(size_t size, int stream, bool small);
  void release_cached_locked();
  void free_locked(Block* block);
  void process_deferred_locked();
  void wait_deferred(std::unique_lock<std::mutex>& lock);
  void drain_streams(std::unique_lock<std::mutex>& lock);
  void record(prof::MemoryEventKind kind, uint64_t bytes, const void* address, prof::CallSiteId site) const;

  Device device_;
  uint32_t trace_device_;
  DeviceMemory& memory_;
  StreamClock* clock_;

  mutable std::mutex mu_;
  Pool small_, large_;
  std::vector<std::unique_ptr<Segment>> segments_;
  std::vector<Deferred> deferred_;
  uint32_t streams_used_ = 0;  // bit s: some block was allocated for or used on stream s
  MemoryStats stats_;
};

}  // namespace loupe::rt::mem
