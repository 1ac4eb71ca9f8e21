#include "memory/caching_allocator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "loupe/rt/errors.h"

namespace loupe::rt::mem {

struct Segment {
  char* base = nullptr;
  size_t size = 0;
  int stream = 0;
  bool small = false;
  Block* first = nullptr;
};

namespace {
std::string bytes_text(int64_t b) {
  double v = double(b);
  if (b >= (int64_t(1) << 30)) return fmt::format("{:.2f} GiB", v / double(1 << 30));
  if (b >= (1 << 20)) return fmt::format("{:.1f} MiB", v / double(1 << 20));
  if (b >= (1 << 10)) return fmt::format("{:.1f} KiB", v / double(1 << 10));
  return fmt::format("{} B", b);
}

// Merges the block after `b` in its segment into `b` (neither in a pool).
void absorb_next(Block* b) {
  Block* n = b->next;
  b->size += n->size;
  b->next = n->next;
  if (n->next) n->next->prev = b;
  delete n;
}
}  // namespace

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

CachingAllocator::CachingAllocator(Device device, uint32_t trace_device, DeviceMemory& memory, StreamClock* clock,
                                   int64_t capacity)
    : device_(device), trace_device_(trace_device), memory_(memory), clock_(clock) {
  stats_.capacity = capacity;
}

CachingAllocator::~CachingAllocator() {
  // Arrays may outlive the allocator only at process exit; give back what
  // is entirely free and leave the rest to the OS.
  std::lock_guard lock(mu_);
  process_deferred_locked();
  release_cached_locked();
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  return (bytes + kRound - 1) / kRound * kRound;
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  if (rounded < kMinLargeAlone) return kLargeSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

void CachingAllocator::record(prof::MemoryEventKind kind, uint64_t bytes, const void* address,
                              prof::CallSiteId site) const {
  if (!prof::capturing()) return;
  prof::memory_event({.device = trace_device_,
                      .kind = kind,
                      .bytes = bytes,
                      .address = uint64_t(reinterpret_cast<uintptr_t>(address)),
                      .allocated = stats_.allocated,
                      .reserved = stats_.reserved,
                      .callsite = site});
}

Block* CachingAllocator::find_free_locked(size_t size, int stream, bool small) {
  Pool& pool = small ? small_ : large_;
  Block key;
  key.stream = stream;
  key.size = size;
  key.ptr = nullptr;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

Block* CachingAllocator::reserve_segment_locked(size_t size, int stream, bool small) {
  size_t seg_size = segment_size(size);
  if (stats_.reserved + int64_t(seg_size) > stats_.capacity) return nullptr;
  void* base = memory_.reserve(seg_size);
  if (base == nullptr) return nullptr;
  auto seg = std::make_unique<Segment>();
  seg->base = static_cast<char*>(base);
  seg->size = seg_size;
  seg->stream = stream;
  seg->small = small;
  auto* b = new Block;
  b->ptr = seg->base;
  b->size = seg_size;
  b->stream = stream;
  b->small = small;
  b->segment = seg.get();
  seg->first = b;
  segments_.push_back(std::move(seg));
  stats_.reserved += int64_t(seg_size);
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  ++stats_.reserves;
  record(prof::MemoryEventKind::reserve, seg_size, base, prof::kNoCallSite);
  return b;
}

void CachingAllocator::release_cached_locked() {
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment* seg = it->get();
    Block* b = seg->first;
    if (b->allocated || b->next != nullptr) {
      ++it;
      continue;
    }
    (seg->small ? small_ : large_).erase(b);
    memory_.release(seg->base, seg->size);
    stats_.reserved -= int64_t(seg->size);
    ++stats_.releases;
    record(prof::MemoryEventKind::release, seg->size, seg->base, prof::kNoCallSite);
    delete b;
    it = segments_.erase(it);
  }
}

void CachingAllocator::process_deferred_locked() {
  if (deferred_.empty()) return;
  std::vector<Deferred> still;
  for (Deferred& d : deferred_) {
    bool done = true;
    for (auto [stream, mark] : d.marks) {
      if (clock_ == nullptr || clock_->passed(stream, mark)) continue;
      done = false;
      break;
    }
    if (done) free_locked(d.block);
    else still.push_back(std::move(d));
  }
  deferred_ = std::move(still);
}

Block* CachingAllocator::allocate(const AllocRequest& req) {
  size_t size = round_size(req.bytes);
  bool small = size <= kSmallRequest;
  std::unique_lock lock(mu_);
  process_deferred_locked();
  Block* b = find_free_locked(size, req.stream, small);
  if (b == nullptr) b = reserve_segment_locked(size, req.stream, small);
  if (b == nullptr) {
    // Give everything cached back to the device (after the streams finish
    // with blocks whose free waits on them), then try once more. The host
    // waits meanwhile: a span says how long, for the memory analysis.
    prof::Scope retrying("allocator retry", prof::SpanKind::wait, req.site);
    ++stats_.retries;
    record(prof::MemoryEventKind::retry, size, nullptr, req.site);
    wait_deferred(lock);
    drain_streams(lock);
    release_cached_locked();
    b = find_free_locked(size, req.stream, small);
    if (b == nullptr) b = reserve_segment_locked(size, req.stream, small);
  }
  if (b == nullptr) {
    ++stats_.ooms;
    record(prof::MemoryEventKind::oom, size, nullptr, req.site);
    std::string what;
    if (req.op != nullptr) what = fmt::format(" for {}", req.op);
    if (req.loc != nullptr && req.loc->line() != 0) {
      const char* file = req.loc->file_name();
      const char* slash = std::strrchr(file, '/');
      what += fmt::format(" at {}:{}", slash ? slash + 1 : file, req.loc->line());
    }
    throw OutOfMemory(fmt::format("{} out of memory: cannot allocate {}{}, with {} in use and {} reserved of "
                                  "{} capacity (after freeing the cache)",
                                  device_.str(), bytes_text(int64_t(size)), what, bytes_text(stats_.allocated),
                                  bytes_text(stats_.reserved), bytes_text(stats_.capacity)),
                      device_, int64_t(size), stats_.allocated, stats_.capacity);
  }
  // Split off what is not needed when the rest is worth keeping.
  size_t rest = b->size - size;
  if ((small && rest >= kRound) || (!small && rest > kSmallRequest)) {
    auto* r = new Block;
    r->ptr = b->ptr + size;
    r->size = rest;
    r->stream = b->stream;
    r->small = small;
    r->segment = b->segment;
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    (small ? small_ : large_).insert(r);
  }
  b->allocated = true;
  if (req.stream >= 0 && req.stream < 32) streams_used_ |= 1u << req.stream;
  b->site = req.site;
  b->other_streams = 0;
  stats_.allocated += int64_t(b->size);
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  ++stats_.allocs;
  record(prof::MemoryEventKind::alloc, b->size, b->ptr, req.site);
  return b;
}

void CachingAllocator::record_use(Block* block, int stream) {
  if (stream == block->stream || stream < 0 || stream >= 32) return;
  std::lock_guard lock(mu_);
  block->other_streams |= 1u << stream;
  streams_used_ |= 1u << stream;
}

void CachingAllocator::free(Block* block) {
  std::lock_guard lock(mu_);
  stats_.allocated -= int64_t(block->size);
  ++stats_.frees;
  record(prof::MemoryEventKind::free, block->size, block->ptr, block->site);
  if (block->other_streams != 0 && clock_ != nullptr) {
    Deferred d{block, {}};
    for (int s = 0; s < 32; ++s)
      if (block->other_streams & (1u << s)) d.marks.push_back({s, clock_->mark(s)});
    deferred_.push_back(std::move(d));
    return;
  }
  free_locked(block);
}

void CachingAllocator::free_locked(Block* b) {
  b->allocated = false;
  b->other_streams = 0;
  Pool& pool = b->small ? small_ : large_;
  // Coalesce with free neighbours (blocks waiting in deferred_ are still
  // marked allocated and stay apart).
  if (b->prev && !b->prev->allocated) {
    Block* p = b->prev;
    pool.erase(p);
    absorb_next(p);
    b = p;
  }
  if (b->next && !b->next->allocated) {
    pool.erase(b->next);
    absorb_next(b);
  }
  pool.insert(b);
}

void CachingAllocator::empty_cache() {
  std::unique_lock lock(mu_);
  wait_deferred(lock);
  drain_streams(lock);
  release_cached_locked();
}

// A block freed in stream order can still be in use by work queued on its
// stream: handing it to the next request on that stream is safe, giving
// its segment back to the device is not. Before segments go back, every
// stream finishes what it has queued (as cudaFree synchronizes a GPU).
void CachingAllocator::drain_streams(std::unique_lock<std::mutex>& lock) {
  if (clock_ == nullptr || streams_used_ == 0) return;
  std::vector<std::pair<int, uint64_t>> marks;
  for (int s = 0; s < 32; ++s) {
    if (streams_used_ & (1u << s)) marks.push_back({s, clock_->mark(s)});
  }
  lock.unlock();
  for (auto [stream, mark] : marks) clock_->wait(stream, mark);
  lock.lock();
  process_deferred_locked();
}

void CachingAllocator::wait_deferred(std::unique_lock<std::mutex>& lock) {
  // Wait without the lock: a stream's worker may free a block (dropping
  // what a finished task held) while we wait for it.
  if (deferred_.empty() || clock_ == nullptr) return;
  std::vector<std::pair<int, uint64_t>> marks;
  for (const Deferred& d : deferred_) marks.insert(marks.end(), d.marks.begin(), d.marks.end());
  lock.unlock();
  for (auto [stream, mark] : marks) clock_->wait(stream, mark);
  lock.lock();
  process_deferred_locked();
}

void CachingAllocator::set_capacity(int64_t bytes) {
  std::unique_lock lock(mu_);
  stats_.capacity = bytes;
  if (stats_.reserved > bytes) {
    drain_streams(lock);
    release_cached_locked();
  }
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mu_);
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mu_);
  MemoryStats s = stats_;
  s.largest_free_block = 0;
  for (const Pool* pool : {&small_, &large_})
    for (const Block* b : *pool) s.largest_free_block = std::max(s.largest_free_block, int64_t(b->size));
  return s;
}

}  // namespace loupe::rt::mem
