// The record API: how the runtime (or any program) reports what it does.
//
// Called millions of times a second, so the common path is inline: one
// relaxed atomic load to see whether a capture is active, one clock read,
// and a 64-byte write into this thread's ring buffer, with no lock and no
// allocation. With no capture active, each call is the load and a branch.
// A capture (capture.h) drains the rings on a background thread and writes
// the trace file.
//
// Names passed as `const char*` must outlive the capture: string literals,
// or pointers returned by intern(). Registration calls (intern, callsite,
// register_device...) take a lock; call them once per thing and keep the
// result, not once per event.
//
// If a thread's ring is full when it records, the event is dropped and
// counted; the count reaches the trace's meta table and `loupe info`.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <version>
#if defined(__cpp_lib_source_location)
#include <source_location>
#endif
#include <string_view>

#include "loupe/prof/clock.h"
#include "loupe/prof/trace_format.h"

namespace loupe::prof {

// ---- Registration (takes a lock; call once, keep the result) ------------

// A copy of `text` that lives as long as the process; equal texts give the
// same pointer.
const char* intern(std::string_view text);

// An id for a source location; 0 means "no call site".
using CallSiteId = uint32_t;
inline constexpr CallSiteId kNoCallSite = 0;
CallSiteId callsite(const char* file, uint32_t line, const char* function);
// A frame called from the call site `parent` (0: none): interning a stack
// outermost frame first gives each frame's call site, and the innermost one
// names the whole stack.
CallSiteId callsite(const char* file, uint32_t line, const char* function, CallSiteId parent);
#if defined(__cpp_lib_source_location)
inline CallSiteId callsite(const std::source_location& where = std::source_location::current()) {
  return callsite(where.file_name(), uint32_t(where.line()), where.function_name());
}
#endif

struct DeviceInfo {
  uint32_t id = 0;
  std::string name;
  DeviceKind kind = DeviceKind::cpu;
  int64_t memory_capacity = 0;  // bytes; 0 when unknown
  int64_t copy_bandwidth = 0;   // bytes per second host<->device; 0 when unknown
  std::string detail;           // what runs its kernels: a BLAS and its kernel set, a library; "" unknown
};
void register_device(const DeviceInfo& device);
void register_stream(uint32_t device, uint32_t stream, std::string_view name);
// A fact about the recording for the trace's meta table (one of
// trace_format.h's kMeta keys), written with the devices; the last value
// given for a key stands.
void note_meta(std::string_view key, std::string_view value);
// Names the calling thread in the trace ("main", "loader", "cpu0:stream1").
void set_thread_name(std::string_view name);

// A fresh id that links a launch on the host to the device operation it
// started (and a transfer to its copy). Never 0.
uint64_t next_correlation_id();

// ---- The event records (what a ring slot holds) --------------------------

struct DeviceOp {
  uint32_t device = 0;
  uint32_t stream = 0;
  DeviceOpKind kind = DeviceOpKind::kernel;
  CopyKind copy = CopyKind::none;
  const char* name = "";
  Ticks start = 0, end = 0;  // when the device ran it
  uint64_t bytes = 0;        // copied or set; 0 for kernels
  uint64_t correlation = 0;  // the launch's id, 0 if none
};

struct Launch {
  const char* name = "";
  Ticks start = 0, end = 0;  // the host-side call
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t correlation = 0;
};

struct Transfer {
  Ticks start = 0, end = 0;  // host time inside the transfer call
  uint32_t device = 0;
  CopyKind direction = CopyKind::host_to_device;
  HostMemory host_memory = HostMemory::unknown;
  bool synchronous = false;  // the host waited for the copy to finish
  bool implicit = false;     // not asked for by name (item(), printing...)
  uint64_t bytes = 0;
  CallSiteId callsite = kNoCallSite;
  uint64_t correlation = 0;  // the device memcpy's id, 0 if none
};

struct MemoryEvent {
  uint32_t device = 0;
  MemoryEventKind kind = MemoryEventKind::alloc;
  uint64_t bytes = 0;
  uint64_t address = 0;
  int64_t allocated = 0;  // the device's allocated bytes after this event
  int64_t reserved = 0;   // the device's reserved bytes after this event
  CallSiteId callsite = kNoCallSite;
};

// A jitted function's compile-cache lookup and, on a miss, its compile.
// Recorded through a locked queue rather than the ring: it is rare and
// carries text (the reason, the optimised IR).
struct Compile {
  const char* function = "";   // interned
  const char* signature = "";  // interned: "f32[256,784], f32[256]"
  CompileKind kind = CompileKind::miss;
  std::string reason;  // misses: why the cache missed
  Ticks start = 0, end = 0;
  int64_t trace_ns = 0, optimize_ns = 0, codegen_ns = 0;
  uint32_t nodes = 0, kernels = 0;
  std::string ir;  // misses: the optimised IR as text
  CallSiteId callsite = kNoCallSite;
  uint64_t function_object = 0;  // identity of the jitted function object
};

namespace detail {

enum class EventKind : uint8_t { span, instant, counter, device_op, launch, transfer, memory, step };

struct SpanRecord {
  Ticks start, end;
  const char* name;
  uint32_t depth;
  SpanKind kind;
  uint32_t callsite;
};
struct InstantRecord {
  Ticks time;
  const char* name;
  SpanKind kind;
};
struct CounterRecord {
  Ticks time;
  const char* name;
  double value;
};
struct StepRecord {
  Ticks start, end;
  int64_t number;
};
struct MemoryRecord {
  Ticks time;
  MemoryEvent event;
};

struct alignas(64) RawEvent {
  RawEvent() : kind(EventKind::span), span{} {}
  EventKind kind;
  union {
    SpanRecord span;
    InstantRecord instant;
    CounterRecord counter;
    DeviceOp device_op;
    Launch launch;
    Transfer transfer;
    MemoryRecord memory;
    StepRecord step;
  };
};
static_assert(sizeof(RawEvent) == 64, "a ring slot is one cache line");

// A single-producer single-consumer ring owned by one thread.
struct Ring {
  RawEvent* slots = nullptr;
  uint64_t mask = 0;                               // capacity - 1 (a power of two)
  uint64_t half = 0;                               // capacity / 2: wake the drainer
  uint64_t head = 0;                               // producer: next slot to write
  uint64_t cached_tail = 0;                        // producer: last tail it read
  alignas(64) std::atomic<uint64_t> published{0};  // producer -> consumer
  alignas(64) std::atomic<uint64_t> tail{0};       // consumer -> producer
  std::atomic<uint64_t> dropped{0};                // written by the producer only
};

// An open span of span_begin()/span_end().
struct OpenSpan {
  Ticks start;  // 0 when the span began with no capture active
  const char* name;
  SpanKind kind;
  uint32_t callsite;
  uint32_t visible_depth;
  uint32_t generation;  // the capture it began in
};

inline constexpr uint32_t kMaxOpenSpans = 128;

// Per-thread state. Trivially constructible, so access needs no guard.
struct ThreadState {
  Ring* ring;
  uint32_t depth;          // entries in `open`
  uint32_t visible_depth;  // of those, the ones that began while capturing
  uint32_t overflow;       // span_begin calls beyond kMaxOpenSpans
  OpenSpan open[kMaxOpenSpans];
  Ticks step_start;
  int64_t step_number;
  uint32_t step_generation;
};
extern thread_local ThreadState t_state;

// Odd while a capture is active; incremented at every start and stop.
extern std::atomic<uint32_t> g_generation;

// Creates this thread's ring, or rereads its tail once it looks half full
// (and wakes the drainer if it is); nullptr when the event must be dropped
// (it has then been counted).
RawEvent* acquire_slow();

inline RawEvent* acquire() {
  Ring* r = t_state.ring;
  if (r == nullptr || r->head - r->cached_tail >= r->half) [[unlikely]]
    return acquire_slow();
  return &r->slots[r->head & r->mask];
}
inline void publish() {
  Ring* r = t_state.ring;
  r->published.store(++r->head, std::memory_order_release);
}

// Writes one event of `kind` into this thread's ring, fill(event) setting
// its record; a full ring drops it.
template <typename Fill>
inline void emit(EventKind kind, Fill&& fill) {
  RawEvent* e = acquire();
  if (e == nullptr) return;
  e->kind = kind;
  fill(*e);
  publish();
}

}  // namespace detail

// ---- The hot path ---------------------------------------------------------

inline bool capturing() { return detail::g_generation.load(std::memory_order_relaxed) & 1u; }

// Nested host spans on the calling thread. Every span_begin needs its
// span_end, also when no capture is active; a span counts only if it began
// during the capture that sees it end.
inline void span_begin(const char* name, SpanKind kind = SpanKind::user, CallSiteId site = kNoCallSite) {
  using namespace detail;
  ThreadState& st = t_state;
  if (st.depth >= kMaxOpenSpans) [[unlikely]] {
    ++st.overflow;
    return;
  }
  uint32_t gen = g_generation.load(std::memory_order_relaxed);
  OpenSpan& s = st.open[st.depth++];
  s.name = name;
  s.kind = kind;
  s.callsite = site;
  s.generation = gen;
  if (gen & 1u) {
    s.visible_depth = st.visible_depth++;
    s.start = ticks_now();
  } else {
    s.start = 0;
  }
}

inline void span_end() {
  using namespace detail;
  ThreadState& st = t_state;
  if (st.overflow > 0) [[unlikely]] {
    --st.overflow;
    return;
  }
  if (st.depth == 0) [[unlikely]]
    return;
  const OpenSpan& s = st.open[--st.depth];
  if (s.start == 0) return;
  if (st.visible_depth > 0) --st.visible_depth;
  if (g_generation.load(std::memory_order_relaxed) != s.generation) return;
  Ticks end = ticks_now();
  emit(EventKind::span, [&](RawEvent& e) { e.span = {s.start, end, s.name, s.visible_depth, s.kind, s.callsite}; });
}

// A span for the lifetime of a scope. Kind `user` marks code; kind
// `timing` declares a measurement (a stopwatch), the only kind the
// async-timing analysis judges.
class Scope {
 public:
  explicit Scope(const char* name, SpanKind kind = SpanKind::user, CallSiteId site = kNoCallSite) {
    span_begin(name, kind, site);
  }
  ~Scope() { span_end(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

// A span whose times the caller measured (a phase timed elsewhere).
inline void span(const char* name, Ticks start, Ticks end, SpanKind kind = SpanKind::runtime,
                 CallSiteId site = kNoCallSite) {
  using namespace detail;
  if (!capturing()) return;
  emit(EventKind::span, [&](RawEvent& e) { e.span = {start, end, name, t_state.visible_depth, kind, site}; });
}

inline void instant(const char* name, SpanKind kind = SpanKind::user) {
  using namespace detail;
  if (!capturing()) return;
  Ticks now = ticks_now();
  emit(EventKind::instant, [&](RawEvent& e) { e.instant = {now, name, kind}; });
}

inline void counter(const char* name, double value) {
  using namespace detail;
  if (!capturing()) return;
  Ticks now = ticks_now();
  emit(EventKind::counter, [&](RawEvent& e) { e.counter = {now, name, value}; });
}

inline void device_op(const DeviceOp& op) {
  using namespace detail;
  if (!capturing()) return;
  emit(EventKind::device_op, [&](RawEvent& e) { e.device_op = op; });
}

inline void launch(const Launch& l) {
  using namespace detail;
  if (!capturing()) return;
  emit(EventKind::launch, [&](RawEvent& e) { e.launch = l; });
}

inline void transfer(const Transfer& t) {
  using namespace detail;
  if (!capturing()) return;
  emit(EventKind::transfer, [&](RawEvent& e) { e.transfer = t; });
}

inline void memory_event(const MemoryEvent& m) {
  using namespace detail;
  if (!capturing()) return;
  Ticks now = ticks_now();
  emit(EventKind::memory, [&](RawEvent& e) { e.memory = {now, m}; });
}

// A memory event at a time of its own, not now: one from a history an
// allocator kept (PyTorch's CUDA allocator), added when it is read.
inline void memory_event_at(Ticks at, const MemoryEvent& m) {
  using namespace detail;
  if (!capturing()) return;
  emit(EventKind::memory, [&](RawEvent& e) { e.memory = {at, m}; });
}

// Training steps: step_begin(n) ... step_end() on one thread.
inline void step_begin(int64_t number) {
  using namespace detail;
  uint32_t gen = g_generation.load(std::memory_order_relaxed);
  t_state.step_generation = gen;
  t_state.step_number = number;
  t_state.step_start = (gen & 1u) ? ticks_now() : 0;
}

inline void step_end() {
  using namespace detail;
  ThreadState& st = t_state;
  if (st.step_start == 0 || g_generation.load(std::memory_order_relaxed) != st.step_generation) return;
  Ticks end = ticks_now();
  Ticks start = st.step_start;
  st.step_start = 0;
  emit(EventKind::step, [&](RawEvent& e) { e.step = {start, end, st.step_number}; });
}

class StepScope {
 public:
  explicit StepScope(int64_t number) { step_begin(number); }
  ~StepScope() { step_end(); }
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;
};

// Slow path: takes a lock, copies the strings.
void compile(Compile event);

}  // namespace loupe::prof
