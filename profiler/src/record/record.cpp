#include "loupe/prof/record.h"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>

#include "record/registry.h"

namespace loupe::prof {
namespace detail {

thread_local ThreadState t_state;
std::atomic<uint32_t> g_generation{0};

namespace {

std::atomic<uint64_t> g_correlation{0};

// Owns the calling thread's registry entry and retires it at thread exit.
struct ThreadOwner {
  ThreadEntry* entry = nullptr;
  bool exited = false;
  ~ThreadOwner() {
    exited = true;
    t_state.ring = nullptr;
    if (entry == nullptr) return;
    Registry& reg = Registry::get();
    std::lock_guard lock(reg.mu);
    if (reg.capture_active) {
      entry->retired = true;  // the capture drains it, then frees it
      return;
    }
    std::erase_if(reg.threads, [&](const auto& e) { return e.get() == entry; });
  }
};
thread_local ThreadOwner t_owner;

}  // namespace

Registry& Registry::get() {
  // Never destroyed: threads and atexit handlers may record after static
  // destructors have run.
  static Registry* registry = new Registry;
  return *registry;
}

ThreadEntry& Registry::this_thread_locked() {
  if (t_owner.entry != nullptr) return *t_owner.entry;
  auto entry = std::make_unique<ThreadEntry>();
  entry->id = next_thread_id++;
  entry->process = ::getpid();
  entry->os_tid = ::gettid();
  entry->name = entry->os_tid == entry->process ? "main" : fmt::format("thread {}", entry->os_tid);
  t_owner.entry = entry.get();
  threads.push_back(std::move(entry));
  ++version;
  return *t_owner.entry;
}

ThreadEntry& Registry::thread_by_os_tid_locked(int64_t os_tid) {
  for (auto& e : threads) {
    if (e->os_tid == os_tid && !e->retired) return *e;
  }
  auto entry = std::make_unique<ThreadEntry>();
  entry->id = next_thread_id++;
  entry->process = ::getpid();
  entry->os_tid = os_tid;
  entry->name = os_tid == entry->process ? "main" : fmt::format("thread {}", os_tid);
  threads.push_back(std::move(entry));
  ++version;
  return *threads.back();
}

bool submit_external(ExternalEvents&& batch) {
  Registry& reg = Registry::get();
  std::lock_guard lock(reg.mu);
  if (!reg.capture_active) return false;
  reg.external.push_back(std::move(batch));
  return true;
}

void request_drain() {
  Registry& reg = Registry::get();
  // One wake-up per request: the drainer clears the flag when it drains.
  if (reg.drain_requested.load(std::memory_order_relaxed) ||
      reg.drain_requested.exchange(true, std::memory_order_acq_rel))
    return;
  // Passing through the drainer's lock orders this request after its last
  // look at the flag: it is either seen there or woken here.
  { std::lock_guard lock(reg.drain_mu); }
  reg.drain_cv.notify_one();
}

// Gives the calling thread its ring. The slots are allocated outside the
// registry's lock: every thread's first event, the drainer, compiles and
// call sites take that lock, and a thread that allocated under it would
// stall them all. nullptr when memory is short: the event is dropped and
// counted, the program runs on.
Ring* create_ring() {
  Registry& reg = Registry::get();
  uint64_t capacity;
  {
    std::lock_guard lock(reg.mu);
    capacity = std::bit_ceil(uint64_t(std::max<uint32_t>(reg.ring_capacity, 2)));
  }
  RingSlots slots(static_cast<RawEvent*>(std::aligned_alloc(alignof(RawEvent), capacity * sizeof(RawEvent))));
  std::lock_guard lock(reg.mu);
  ThreadEntry& e = reg.this_thread_locked();
  if (!e.has_ring) {
    if (slots == nullptr) {
      e.ring.dropped.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    e.storage = std::move(slots);
    e.ring.slots = e.storage.get();
    e.ring.mask = capacity - 1;
    e.ring.half = capacity / 2;
    e.has_ring = true;
  }
  return &e.ring;
}

RawEvent* acquire_slow() {
  ThreadState& st = t_state;
  Ring* r = st.ring;
  if (r == nullptr) {
    if (t_owner.exited) return nullptr;
    st.ring = r = create_ring();
    if (r == nullptr) return nullptr;
  }
  if (r->head - r->cached_tail >= r->half) {
    r->cached_tail = r->tail.load(std::memory_order_acquire);
    const uint64_t used = r->head - r->cached_tail;
    // Half full: the drainer sleeps longer when rings fill slowly, so a
    // burst wakes it before the ring overflows.
    if (used >= r->half) request_drain();
    if (used > r->mask) {
      r->dropped.store(r->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  return &r->slots[r->head & r->mask];
}

}  // namespace detail

using detail::Registry;

const char* intern(std::string_view text) {
  Registry& reg = Registry::get();
  std::lock_guard lock(reg.mu);
  return reg.strings.emplace(text).first->c_str();
}

CallSiteId callsite(const char* file, uint32_t line, const char* function) { return callsite(file, line, function, 0); }

CallSiteId callsite(const char* file, uint32_t line, const char* function, CallSiteId parent) {
  Registry& reg = Registry::get();
  std::string key = fmt::format("{}:{}:{}<{}", file, line, function, parent);
  std::lock_guard lock(reg.mu);
  // A parent is an id this function handed out: ids only grow, so a
  // stack's frames are interned outermost first and the tree has no cycle.
  if (parent > reg.callsites.size()) parent = 0;
  auto [it, inserted] = reg.callsite_ids.emplace(std::move(key), CallSiteId(reg.callsites.size() + 1));
  // Keep copies: callers need not pass strings that live forever.
  if (inserted)
    reg.callsites.push_back(
        {reg.strings.emplace(file).first->c_str(), reg.strings.emplace(function).first->c_str(), line, parent});
  return it->second;
}

void register_device(const DeviceInfo& device) {
  Registry& reg = Registry::get();
  std::lock_guard lock(reg.mu);
  std::erase_if(reg.devices, [&](const DeviceInfo& d) { return d.id == device.id; });
  reg.devices.push_back(device);
  ++reg.version;
}

void note_meta(std::string_view key, std::string_view value) {
  Registry& reg = Registry::get();
  std::lock_guard lock(reg.mu);
  reg.notes[std::string(key)] = std::string(value);
  ++reg.version;
}

void register_stream(uint32_t device, uint32_t stream, std::string_view name) {
  Registry& reg = Registry::get();
  std::lock_guard lock(reg.mu);
  std::erase_if(reg.streams, [&](const Registry::Stream& s) { return s.device == device && s.stream == stream; });
  reg.streams.push_back({device, stream, std::string(name)});
  ++reg.version;
}

void set_thread_name(std::string_view name) {
  Registry& reg = Registry::get();
  std::lock_guard lock(reg.mu);
  reg.this_thread_locked().name = std::string(name);
  ++reg.version;
}

uint64_t next_correlation_id() { return detail::g_correlation.fetch_add(1, std::memory_order_relaxed) + 1; }

void compile(Compile event) {
  if (!capturing()) return;
  Registry& reg = Registry::get();
  std::lock_guard lock(reg.mu);
  uint32_t thread = reg.this_thread_locked().id;
  reg.compiles.push_back({thread, std::move(event)});
}

}  // namespace loupe::prof
