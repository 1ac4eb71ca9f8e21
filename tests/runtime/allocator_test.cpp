// The caching allocator against a model: random allocation sequences keep
// its accounting exact, blocks never overlap, memory is reused in stream
// order, and out-of-memory gives the cache back first.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <set>

#include "loupe/rt/errors.h"
#include "memory/caching_allocator.h"

namespace loupe::test {
namespace {

using loupe::rt::mem::Block;
using loupe::rt::mem::CachingAllocator;

// Device memory from the heap, tracking what is reserved.
class FakeMemory final : public rt::mem::DeviceMemory {
 public:
  void* reserve(size_t bytes) override {
    if (fail_next) {
      fail_next = false;
      return nullptr;
    }
    void* p = std::malloc(bytes);
    segments[p] = bytes;
    reserved += int64_t(bytes);
    return p;
  }
  void release(void* ptr, size_t bytes) override {
    ASSERT_EQ(segments.at(ptr), bytes);
    segments.erase(ptr);
    reserved -= int64_t(bytes);
    std::free(ptr);
  }
  std::map<void*, size_t> segments;
  int64_t reserved = 0;
  bool fail_next = false;
};

// Streams whose progress the test controls.
class FakeClock final : public rt::mem::StreamClock {
 public:
  uint64_t mark(int stream) override { return submitted[stream]; }
  bool passed(int stream, uint64_t m) override { return completed[stream] >= m; }
  void wait(int stream, uint64_t m) override { completed[stream] = std::max(completed[stream], m); }
  uint64_t submitted[4] = {}, completed[4] = {};
};

struct Live {
  Block* block;
  size_t requested;
  uint8_t pattern;
};

class AllocatorModel : public ::testing::Test {
 protected:
  FakeMemory memory;
  FakeClock clock;
  std::vector<Live> live;

  void fill(const Live& l) { std::memset(l.block->ptr, l.pattern, l.requested); }
  void check(const CachingAllocator& a) {
    rt::MemoryStats s = a.stats();
    int64_t allocated = 0;
    for (const Live& l : live) {
      allocated += int64_t(l.block->size);
      EXPECT_GE(l.block->size, CachingAllocator::round_size(l.requested));
      // Its bytes are intact: no other block overlapped it.
      for (size_t i = 0; i < l.requested; i += 97) ASSERT_EQ(uint8_t(l.block->ptr[i]), l.pattern);
      // It lies inside one reserved segment.
      auto it = memory.segments.upper_bound(l.block->ptr);
      ASSERT_NE(it, memory.segments.begin());
      --it;
      EXPECT_LE(l.block->ptr + l.block->size, static_cast<char*>(it->first) + it->second);
    }
    EXPECT_EQ(s.allocated, allocated);
    EXPECT_EQ(s.reserved, memory.reserved);
    EXPECT_LE(s.reserved, s.capacity);
    EXPECT_GE(s.peak_allocated, s.allocated);
    EXPECT_EQ(s.allocs - s.frees, live.size() + deferred_);
  }
  size_t deferred_ = 0;
};

TEST_F(AllocatorModel, RandomSequencesKeepExactAccounts) {
  const int64_t capacity = int64_t(96) << 20;
  CachingAllocator a(rt::Device{}, 0, memory, &clock, capacity);
  std::mt19937 gen(7);
  uint64_t ooms = 0;
  for (int step = 0; step < 4000; ++step) {
    int action = int(gen() % 10);
    if (action < 6 || live.empty()) {
      // Mostly small, sometimes large, occasionally huge.
      size_t bytes = gen() % 10 == 0 ? 1 + gen() % (24 << 20) : 1 + gen() % 200000;
      int stream = int(gen() % 2);
      try {
        Block* b = a.allocate({.bytes = bytes, .stream = stream});
        Live l{b, bytes, uint8_t(gen())};
        fill(l);
        live.push_back(l);
      } catch (const rt::OutOfMemory& e) {
        ++ooms;
        EXPECT_EQ(e.requested, int64_t(CachingAllocator::round_size(bytes)));
        EXPECT_EQ(e.capacity, capacity);
        EXPECT_EQ(e.in_use, a.stats().allocated);
        // The cache went back to the device before giving up: every segment
        // still reserved holds a live block.
        for (const auto& [base, size] : memory.segments) {
          bool used = false;
          for (const Live& l : live)
            used |= l.block->ptr >= static_cast<char*>(base) && l.block->ptr < static_cast<char*>(base) + size;
          EXPECT_TRUE(used) << "a cached segment survived an OOM";
        }
      }
    } else {
      size_t i = gen() % live.size();
      if (gen() % 4 == 0) a.record_use(live[i].block, 1 - live[i].block->stream);
      ++clock.submitted[0];
      ++clock.submitted[1];
      a.free(live[i].block);
      live.erase(live.begin() + long(i));
    }
    if (gen() % 5 == 0) clock.completed[gen() % 2] = clock.submitted[0];
    rt::MemoryStats s = a.stats();
    deferred_ = size_t(s.allocs - s.frees) - live.size();
    check(a);
    if (HasFailure()) return;
  }
  EXPECT_GT(ooms, 0u);  // the sequence did reach the capacity
  for (const Live& l : live) a.free(l.block);
  live.clear();
  a.empty_cache();  // waits for the streams, then releases everything
  rt::MemoryStats s = a.stats();
  EXPECT_EQ(s.allocated, 0);
  EXPECT_EQ(s.reserved, 0);
  EXPECT_EQ(memory.reserved, 0);
  EXPECT_EQ(s.allocs, s.frees);
}

TEST_F(AllocatorModel, SizeClassesSplitAndCoalesce) {
  CachingAllocator a(rt::Device{}, 0, memory, nullptr, int64_t(1) << 30);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::segment_size(1000), 2u << 20);        // small pool
  EXPECT_EQ(CachingAllocator::segment_size(5u << 20), 20u << 20);   // large pool
  EXPECT_EQ(CachingAllocator::segment_size(30u << 20), 30u << 20);  // its own, rounded to 2 MiB
  // Three small blocks carved from one 2 MiB segment, back to back.
  Block* b1 = a.allocate({.bytes = 1000});
  Block* b2 = a.allocate({.bytes = 1000});
  Block* b3 = a.allocate({.bytes = 1000});
  EXPECT_EQ(memory.segments.size(), 1u);
  EXPECT_EQ(b2->ptr, b1->ptr + 1024);
  EXPECT_EQ(b3->ptr, b2->ptr + 1024);
  a.free(b2);
  a.free(b1);  // coalesces with b2
  Block* b4 = a.allocate({.bytes = 2000});
  EXPECT_EQ(b4->ptr, b1 == b4 ? b4->ptr : b4->ptr);
  EXPECT_EQ(a.stats().reserved, int64_t(2) << 20);
  a.free(b3);
  a.free(b4);
  // Fully coalesced: one free block the size of the segment.
  EXPECT_EQ(a.stats().largest_free_block, int64_t(2) << 20);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0);
  EXPECT_EQ(a.stats().releases, 1u);
}

TEST_F(AllocatorModel, ReuseIsStreamOrdered) {
  CachingAllocator a(rt::Device{}, 0, memory, &clock, int64_t(1) << 30);
  Block* x = a.allocate({.bytes = 4096, .stream = 0});
  char* where = x->ptr;
  a.free(x);
  // The same stream may reuse it at once: its work runs in order.
  Block* y = a.allocate({.bytes = 4096, .stream = 0});
  EXPECT_EQ(y->ptr, where);
  // Used on stream 1 too: the free waits until stream 1 passes this point.
  a.record_use(y, 1);
  clock.submitted[1] = 5;
  a.free(y);
  Block* z = a.allocate({.bytes = 4096, .stream = 0});
  EXPECT_NE(z->ptr, where);
  clock.completed[1] = 5;
  a.free(z);
  Block* w = a.allocate({.bytes = 4096, .stream = 0});
  Block* v = a.allocate({.bytes = 4096, .stream = 0});
  EXPECT_TRUE(w->ptr == where || v->ptr == where);
  // Another stream's pool is separate.
  Block* other = a.allocate({.bytes = 4096, .stream = 1});
  EXPECT_NE(other->ptr, where);
  a.free(w);
  a.free(v);
  a.free(other);
}

TEST_F(AllocatorModel, RetryFreesTheCacheBeforeFailing) {
  CachingAllocator a(rt::Device{}, 0, memory, nullptr, int64_t(64) << 20);
  Block* big = a.allocate({.bytes = 40u << 20});
  a.free(big);  // cached, still reserved
  EXPECT_EQ(a.stats().reserved, int64_t(40) << 20);
  // 50 MiB fits only once the cached 40 MiB segment is given back.
  Block* bigger = a.allocate({.bytes = 50u << 20});
  rt::MemoryStats s = a.stats();
  EXPECT_EQ(s.retries, 1u);
  EXPECT_EQ(s.releases, 1u);
  EXPECT_EQ(s.reserved, int64_t(50) << 20);
  try {
    a.allocate({.bytes = 20u << 20});
    FAIL() << "no OOM";
  } catch (const rt::OutOfMemory& e) {
    EXPECT_EQ(e.requested, int64_t(20) << 20);
    EXPECT_EQ(e.in_use, int64_t(50) << 20);
    EXPECT_EQ(e.capacity, int64_t(64) << 20);
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos);
  }
  EXPECT_EQ(a.stats().ooms, 1u);
  a.free(bigger);
  // Usable after the failure.
  Block* again = a.allocate({.bytes = 20u << 20});
  a.free(again);
}

// A block freed in stream order may still be read by work queued on its
// stream. Giving its segment back to the device must wait for that work:
// releasing it earlier let a queued kernel read unmapped memory (found by
// the out-of-memory fault test).
TEST_F(AllocatorModel, SegmentsGoBackOnlyAfterTheirStreamsFinish) {
  CachingAllocator a(rt::Device{}, 0, memory, &clock, int64_t(64) << 20);
  Block* used = a.allocate({.bytes = 40u << 20, .stream = 1});
  clock.submitted[1] = 7;  // kernels that read `used` are queued on stream 1
  a.free(used);            // free in stream order: they have not run yet
  EXPECT_EQ(clock.completed[1], 0u);
  // 50 MiB fits only if the 40 MiB segment goes back to the device.
  Block* bigger = a.allocate({.bytes = 50u << 20, .stream = 0});
  EXPECT_EQ(clock.completed[1], 7u) << "the release waited for stream 1's queued work";
  EXPECT_EQ(a.stats().releases, 1u);
  a.free(bigger);
}

}  // namespace
}  // namespace loupe::test
