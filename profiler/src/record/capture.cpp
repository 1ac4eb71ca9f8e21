#include "loupe/prof/capture.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <vector>

#include "loupe/prof/clock.h"
#include "loupe/prof/trace_writer.h"
#include "record/registry.h"

namespace loupe::prof {

using detail::RawEvent;
using detail::Registry;
using detail::ThreadEntry;

namespace {

// A write past the process's file size limit raises SIGXFSZ for the whole
// process, and its default action kills it: a trace growing past the limit
// would take the program down. While a capture records, SIGXFSZ is ignored
// (only if the program left it at its default), so that such a write fails
// with an error the capture reports instead.
bool g_ignoring_sigxfsz = false;

void ignore_sigxfsz() {
  struct sigaction old {
  }, ign{};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  if (sigaction(SIGXFSZ, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
    g_ignoring_sigxfsz = sigaction(SIGXFSZ, &ign, nullptr) == 0;
  }
}

void restore_sigxfsz() {
  struct sigaction cur {
  }, dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  if (g_ignoring_sigxfsz && sigaction(SIGXFSZ, nullptr, &cur) == 0 && cur.sa_handler == SIG_IGN) {
    sigaction(SIGXFSZ, &dfl, nullptr);
  }
  g_ignoring_sigxfsz = false;
}

// Only one capture records at a time: the rings and the generation counter
// are process-wide.
std::mutex g_capture_mu;
bool g_capture_exists = false;

// fork() copies the process with the forking thread alone: a capture's
// drainer and writer are not in the child, and its file is the parent's.
// The child records nothing (until it starts a capture of its own), and a
// capture it inherited stands down when stopped (Capture::State::owner).
// The locks another thread may hold at the fork are taken around it, so
// that the child's copies are free.
void before_fork() {
  g_capture_mu.lock();
  detail::Registry::get().mu.lock();
  detail::Registry::get().drain_mu.lock();
}
void after_fork_in_parent() {
  detail::Registry::get().drain_mu.unlock();
  detail::Registry::get().mu.unlock();
  g_capture_mu.unlock();
}
void after_fork_in_child() {
  detail::Registry& reg = detail::Registry::get();
  if ((detail::g_generation.load(std::memory_order_relaxed) & 1) != 0) {
    detail::g_generation.fetch_add(1, std::memory_order_acq_rel);  // even: not recording
  }
  reg.capture_active = false;
  // A drainer may have been waiting on it: a condition variable with a
  // waiter the child does not have is begun afresh.
  new (&reg.drain_cv) std::condition_variable;
  reg.drain_mu.unlock();
  reg.mu.unlock();
  g_capture_exists = false;
  g_ignoring_sigxfsz = false;  // the child's own setting is left as it is
  g_capture_mu.unlock();
}

void handle_forks() {
  static const bool registered = ::pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) == 0;
  (void)registered;
}

// Two threads serve a capture. The drainer empties the threads' rings into
// a pending buffer; it only copies, so it keeps draining while the writer
// spends a commit inside SQLite. It drains every 2 ms while rings fill
// fast, and backs off to every 16 ms while they fill slowly: each wake-up
// takes a core from the program, and a program whose kernels run on every
// core (the CPU device's matrix products) loses a share of its step to
// each one. A producer whose ring is half full wakes it at once. The
// writer converts pending events to rows and commits them every flush
// interval, or sooner once kCommitBatch events wait. At most kMaxPending
// events wait: past that the drainer leaves events in the rings, which
// then drop and count them.
constexpr auto kMinDrainInterval = std::chrono::milliseconds(2);
constexpr auto kMaxDrainInterval = std::chrono::milliseconds(16);
constexpr size_t kCommitBatch = size_t(1) << 18;
constexpr size_t kMaxPending = size_t(1) << 20;

int64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace

struct Capture::State {
  CaptureOptions options;
  pid_t owner = ::getpid();  // the process recording; a forked child is not
  std::unique_ptr<TraceWriter> writer;
  bool started = false;  // the file was created and recording began
  TickConverter clock;
  int64_t origin_ns = 0;  // CLOCK_MONOTONIC at the trace's origin

  std::thread drainer_thread, writer_thread;
  std::mutex mu;  // guards everything down to `stopped`
  std::condition_variable wake_writer;
  bool stop_drainer = false, stop_writer = false;
  // Events drained and not yet written, with the thread of each run.
  std::vector<RawEvent> pending;
  std::vector<std::pair<uint32_t, size_t>> pending_runs;  // (thread, events)
  bool stopped = false;

  mutable std::mutex stats_mu;
  CaptureStats stats;

  // Drainer-thread state.
  std::vector<ThreadEntry*> entries;
  // Writer-thread state.
  std::unordered_map<const char*, StringId> string_ids;
  uint64_t registry_version = ~uint64_t(0);
  size_t callsites_written = 0;
  uint64_t external_skipped = 0;
  std::vector<RawEvent> writing;
  std::vector<std::pair<uint32_t, size_t>> writing_runs;

  StringId string_id(const char* s) {
    auto [it, inserted] = string_ids.try_emplace(s, 0);
    if (inserted) it->second = writer->intern(s ? s : "");
    return it->second;
  }
  int64_t to_trace_ns(Ticks t) const { return clock.to_monotonic_ns(t) - origin_ns; }

  void run_drainer();
  void run_writer();
  double drain();
  void sync_registry();
  void write_callsites(Registry& reg);
  void write_compiles(Registry& reg);
  void write_external(Registry& reg, detail::ExternalEvents& batch);
  void write_devices_and_streams(const Registry& reg);
  void convert(uint32_t thread, const RawEvent& ev);
  void add_device_op(const DeviceOp& op);
  void add_transfer(uint32_t thread, const Transfer& t);
  void add_memory_event(const RawEvent& ev);
  void commit();
  void report_loss(const std::string& error, uint64_t rows);
};

namespace {
std::mutex g_hooks_mu;
struct Hooks {
  std::vector<void (*)()> start, stop;
};
Hooks& hooks() {
  static auto* h = new Hooks;
  return *h;
}
void run_hooks(std::vector<void (*)()> Hooks::*which) {
  std::vector<void (*)()> list;
  {
    std::lock_guard lock(g_hooks_mu);
    list = hooks().*which;
  }
  for (auto hook : list) hook();
}
}  // namespace

void on_capture_start(void (*hook)()) {
  std::lock_guard lock(g_hooks_mu);
  hooks().start.push_back(hook);
}

void on_capture_stop(void (*hook)()) {
  std::lock_guard lock(g_hooks_mu);
  hooks().stop.push_back(hook);
}

Capture::Capture(CaptureOptions options) : state_(new State) {
  handle_forks();
  State& s = *state_;
  s.options = std::move(options);
  {
    std::lock_guard lock(g_capture_mu);
    if (g_capture_exists) {
      std::fprintf(stderr, "loupe: a capture is already recording; '%s' will not be written\n", s.options.path.c_str());
      s.stopped = true;
      return;
    }
    g_capture_exists = true;
    ignore_sigxfsz();
  }
  s.origin_ns = monotonic_ns();
  WriterOptions wo;
  wo.producer = s.options.producer;
  wo.origin_monotonic_ns = s.origin_ns;
  wo.origin_wall_ns = wall_ns();
  // In the file from its first appearance, so that a reader never finds
  // a trace without its status.
  wo.meta = {{"hostname", host_name()},
             {"pid", std::to_string(::getpid())},
             {"command_line", s.options.command_line},
             {"flush_interval_ms", std::to_string(s.options.flush_interval.count())},
             {"status", "recording"},
             {"capture_start_ns", "0"},
             {"dropped_events", "0"},
             {"lost_events", "0"}};
  try {
    s.writer = std::make_unique<TraceWriter>(s.options.path, wo);
  } catch (const StoreError& e) {
    std::fprintf(stderr, "loupe: %s; the program runs on without recording\n", e.what());
    s.stats.error = e.what();
    s.writer.reset();
    s.stopped = true;
    std::lock_guard lock(g_capture_mu);
    g_capture_exists = false;
    restore_sigxfsz();
    return;
  }
  {
    Registry& reg = Registry::get();
    std::lock_guard lock(reg.mu);
    reg.capture_active = true;
    reg.ring_capacity = std::max<uint32_t>(s.options.buffer_events, 2);
    reg.notes.clear();  // facts of an earlier capture's recording, not this one's
    // Forget whatever an earlier capture left unread; count drops afresh.
    for (auto& e : reg.threads) {
      e->dropped_base = e->ring.dropped.load(std::memory_order_relaxed);
      if (!e->has_ring) continue;
      e->ring.tail.store(e->ring.published.load(std::memory_order_acquire), std::memory_order_release);
    }
    reg.compiles.clear();
    reg.external.clear();
    detail::g_generation.fetch_add(1, std::memory_order_acq_rel);  // odd: recording
  }
  s.started = true;
  s.drainer_thread = std::thread([&s] { s.run_drainer(); });
  s.writer_thread = std::thread([&s] { s.run_writer(); });
  run_hooks(&Hooks::start);
}

Capture::~Capture() {
  stop();
  // In a forked child the state of a capture the parent was recording
  // holds the parent's threads, which the child does not have: it is kept
  // as it is, never destroyed (and stays reachable, so no leak checker
  // takes it for one).
  if (::getpid() != state_->owner && state_->drainer_thread.joinable()) {
    [[maybe_unused]] static State* volatile inherited = nullptr;  // volatile: the store is kept
    inherited = state_.release();
  }
}

bool Capture::ok() const {
  std::lock_guard lock(state_->stats_mu);
  return state_->started && state_->stats.error.empty();
}
const std::string& Capture::path() const { return state_->options.path; }

CaptureStats Capture::stats() const {
  std::lock_guard lock(state_->stats_mu);
  return state_->stats;
}

void Capture::stop() {
  State& s = *state_;
  if (s.stopped) return;
  if (::getpid() != s.owner) {
    s.stopped = true;  // the parent's capture: the parent stops it
    return;
  }
  // Collectors hand over what they hold while the capture still records.
  run_hooks(&Hooks::stop);
  s.stopped = true;
  detail::g_generation.fetch_add(1, std::memory_order_acq_rel);  // even: not recording
  {
    std::lock_guard lock(s.mu);
    s.stop_drainer = true;
  }
  detail::request_drain();
  s.drainer_thread.join();  // after its last drain
  {
    std::lock_guard lock(s.mu);
    s.stop_writer = true;
  }
  s.wake_writer.notify_one();
  s.writer_thread.join();
  std::lock_guard lock(g_capture_mu);
  g_capture_exists = false;
  restore_sigxfsz();
}

void Capture::State::run_drainer() {
  Registry& reg = Registry::get();
  std::chrono::microseconds interval = kMinDrainInterval;
  for (;;) {
    {
      std::unique_lock wait(reg.drain_mu);
      reg.drain_cv.wait_for(wait, interval, [&] { return reg.drain_requested.load(std::memory_order_acquire); });
    }
    bool stopping;
    {
      std::lock_guard lock(mu);
      stopping = stop_drainer;
    }
    reg.drain_requested.store(false, std::memory_order_release);
    // How full the fullest ring was: a quarter or more, and the next drain
    // comes sooner; under a sixteenth, later.
    double fill = drain();
    {
      std::lock_guard lock(stats_mu);
      ++stats.drains;
    }
    if (fill >= 0.25) {
      interval = kMinDrainInterval;
    } else if (fill < 1.0 / 16) {
      interval = std::min<std::chrono::microseconds>(interval * 2, kMaxDrainInterval);
    }
    {
      std::lock_guard lock(mu);
      if (pending.size() >= kCommitBatch) wake_writer.notify_one();
    }
    if (stopping) return;
  }
}

// Copies every ring's new events into `pending`, up to kMaxPending; returns
// the largest share of a ring's capacity that was waiting.
double Capture::State::drain() {
  double fill = 0;
  {
    Registry& reg = Registry::get();
    std::lock_guard lock(reg.mu);
    entries.clear();
    for (auto& e : reg.threads) {
      if (e->has_ring) entries.push_back(e.get());
    }
  }
  std::lock_guard lock(mu);
  for (ThreadEntry* e : entries) {
    detail::Ring& r = e->ring;
    uint64_t tail = r.tail.load(std::memory_order_relaxed);
    uint64_t head = r.published.load(std::memory_order_acquire);
    fill = std::max(fill, double(head - tail) / double(r.mask + 1));
    size_t n = std::min<size_t>(head - tail, kMaxPending - std::min(kMaxPending, pending.size()));
    if (n == 0) continue;
    for (uint64_t i = tail; i != tail + n; ++i) pending.push_back(r.slots[i & r.mask]);
    pending_runs.push_back({e->id, n});
    r.tail.store(tail + n, std::memory_order_release);
  }
  return fill;
}

void Capture::State::run_writer() {
  auto last_commit = std::chrono::steady_clock::now();
  std::unique_lock lock(mu);
  for (;;) {
    wake_writer.wait_until(lock, last_commit + options.flush_interval,
                           [&] { return stop_writer || pending.size() >= kCommitBatch; });
    bool stopping = stop_writer;
    writing.swap(pending);
    writing_runs.swap(pending_runs);
    lock.unlock();
    clock.calibrate();
    sync_registry();
    size_t k = 0;
    for (auto [thread, n] : writing_runs) {
      for (size_t i = 0; i < n; ++i) convert(thread, writing[k++]);
    }
    writing.clear();
    writing_runs.clear();
    commit();
    last_commit = std::chrono::steady_clock::now();
    if (stopping) break;
    lock.lock();
  }
  {
    std::lock_guard stats_lock(stats_mu);
    writer->set_meta("status", stats.error.empty() ? "complete" : "incomplete");
  }
  try {
    writer->close();
  } catch (const StoreError& e) {
    report_loss(e.what(), 0);
  }
  // Closing a connection that could not finish writing retries the write:
  // do it here, while the capture still guards against SIGXFSZ.
  writer.reset();
  // Free the rings of threads that exited during the capture.
  Registry& reg = Registry::get();
  std::lock_guard reg_lock(reg.mu);
  reg.capture_active = false;
  std::erase_if(reg.threads, [](const auto& e) { return e->retired; });
  std::lock_guard stats_lock(stats_mu);
  if (stats.dropped + stats.lost > 0) {
    std::fprintf(
        stderr,
        "loupe: trace '%s': %llu events dropped (a ring full, or no memory for one), %llu lost (write errors)\n",
        options.path.c_str(), (unsigned long long)stats.dropped, (unsigned long long)stats.lost);
  }
}

// Copies names, devices, streams, new call sites and queued compiles into
// the writer.
void Capture::State::sync_registry() {
  Registry& reg = Registry::get();
  std::lock_guard lock(reg.mu);
  write_callsites(reg);
  write_compiles(reg);
  for (detail::ExternalEvents& batch : reg.external) write_external(reg, batch);
  reg.external.clear();
  if (external_skipped > 0) writer->set_meta("skipped_events", std::to_string(external_skipped));
  if (reg.version == registry_version) return;
  registry_version = reg.version;
  write_devices_and_streams(reg);
}

void Capture::State::write_callsites(Registry& reg) {
  for (; callsites_written < reg.callsites.size(); ++callsites_written) {
    const detail::CallSiteEntry& c = reg.callsites[callsites_written];
    writer->put(CallSiteRow{.id = uint32_t(callsites_written + 1),
                            .file = string_id(c.file),
                            .line = c.line,
                            .function = string_id(c.function),
                            .parent = c.parent});
  }
}

void Capture::State::write_compiles(Registry& reg) {
  for (detail::QueuedCompile& q : reg.compiles) {
    Compile& c = q.event;
    CompileRow row;
    row.thread = q.thread;
    row.start = to_trace_ns(c.start);
    row.dur = std::max<int64_t>(0, to_trace_ns(c.end) - row.start);
    row.function = string_id(c.function);
    row.signature = string_id(c.signature);
    row.kind = c.kind;
    row.reason = std::move(c.reason);
    row.trace_ns = c.trace_ns;
    row.optimize_ns = c.optimize_ns;
    row.codegen_ns = c.codegen_ns;
    row.nodes = c.nodes;
    row.kernels = c.kernels;
    row.ir = std::move(c.ir);
    row.callsite = c.callsite;
    row.function_object = c.function_object;
    writer->add(std::move(row));
  }
  reg.compiles.clear();
}

// A batch another source (CUPTI) recorded, on the monotonic clock and OS
// thread ids.
void Capture::State::write_external(Registry& reg, detail::ExternalEvents& batch) {
  auto thread_of = [&](int64_t os_tid) { return reg.thread_by_os_tid_locked(os_tid).id; };
  auto ns = [&](int64_t monotonic) { return monotonic - origin_ns; };
  for (const DeviceRow& d : batch.devices) writer->put(d);
  for (const auto& s : batch.spans) {
    writer->add(HostSpanRow{.thread = thread_of(s.os_tid),
                            .start = ns(s.start),
                            .dur = std::max<int64_t>(0, s.end - s.start),
                            .name = writer->intern(s.name),
                            .kind = s.kind,
                            .depth = s.depth,
                            .callsite = 0});
  }
  for (const auto& o : batch.ops) {
    writer->add(DeviceOpRow{.device = o.device,
                            .stream = o.stream,
                            .start = ns(o.start),
                            .dur = std::max<int64_t>(0, o.end - o.start),
                            .kind = o.kind,
                            .name = writer->intern(o.name),
                            .bytes = o.bytes,
                            .copy_kind = o.copy,
                            .correlation = o.correlation});
  }
  for (const auto& l : batch.launches) {
    writer->add(LaunchRow{.thread = thread_of(l.os_tid),
                          .start = ns(l.start),
                          .dur = std::max<int64_t>(0, l.end - l.start),
                          .name = writer->intern(l.name),
                          .device = l.device,
                          .stream = l.stream,
                          .correlation = l.correlation});
  }
  for (const auto& c : batch.copies) {
    writer->add(TransferRow{.thread = thread_of(c.os_tid),
                            .start = ns(c.start),
                            .dur = std::max<int64_t>(0, c.end - c.start),
                            .device = c.device,
                            .direction = c.direction,
                            .bytes = c.bytes,
                            .synchronous = c.synchronous,
                            .implicit = false,
                            .host_memory = c.host_memory,
                            .callsite = 0,
                            .correlation = c.correlation});
  }
  for (const auto& m : batch.memory) {
    writer->add(MemoryEventRow{.device = m.device,
                               .time = ns(m.time),
                               .kind = m.kind,
                               .bytes = m.bytes,
                               .address = m.address,
                               .allocated = m.allocated,
                               .reserved = m.reserved,
                               .callsite = 0});
  }
  external_skipped += batch.skipped;
}

void Capture::State::write_devices_and_streams(const Registry& reg) {
  for (const DeviceInfo& d : reg.devices) {
    writer->put(DeviceRow{.id = d.id,
                          .name = d.name,
                          .kind = d.kind,
                          .memory_capacity = d.memory_capacity,
                          .copy_bandwidth = d.copy_bandwidth,
                          .detail = d.detail});
  }
  for (const Registry::Stream& st : reg.streams)
    writer->put(StreamRow{.device = st.device, .stream = st.stream, .name = st.name});
  for (const auto& [key, value] : reg.notes) writer->set_meta(key, value);
}

void Capture::State::convert(uint32_t thread, const RawEvent& ev) {
  switch (ev.kind) {
    case detail::EventKind::span: {
      int64_t start = to_trace_ns(ev.span.start);
      writer->add(HostSpanRow{.thread = thread,
                              .start = start,
                              .dur = std::max<int64_t>(0, to_trace_ns(ev.span.end) - start),
                              .name = string_id(ev.span.name),
                              .kind = ev.span.kind,
                              .depth = ev.span.depth,
                              .callsite = ev.span.callsite});
      break;
    }
    case detail::EventKind::instant:
      writer->add(InstantRow{.thread = thread,
                             .time = to_trace_ns(ev.instant.time),
                             .name = string_id(ev.instant.name),
                             .kind = ev.instant.kind});
      break;
    case detail::EventKind::counter:
      writer->add(CounterRow{
          .name = string_id(ev.counter.name), .time = to_trace_ns(ev.counter.time), .value = ev.counter.value});
      break;
    case detail::EventKind::device_op: add_device_op(ev.device_op); break;
    case detail::EventKind::launch: {
      const Launch& l = ev.launch;
      int64_t start = to_trace_ns(l.start);
      writer->add(LaunchRow{.thread = thread,
                            .start = start,
                            .dur = std::max<int64_t>(0, to_trace_ns(l.end) - start),
                            .name = string_id(l.name),
                            .device = l.device,
                            .stream = l.stream,
                            .correlation = l.correlation});
      break;
    }
    case detail::EventKind::transfer: add_transfer(thread, ev.transfer); break;
    case detail::EventKind::memory: add_memory_event(ev); break;
    case detail::EventKind::step: {
      int64_t start = to_trace_ns(ev.step.start);
      writer->add(StepRow{.thread = thread,
                          .start = start,
                          .dur = std::max<int64_t>(0, to_trace_ns(ev.step.end) - start),
                          .number = ev.step.number});
      break;
    }
  }
}

void Capture::State::add_device_op(const DeviceOp& op) {
  int64_t start = to_trace_ns(op.start);
  writer->add(DeviceOpRow{.device = op.device,
                          .stream = op.stream,
                          .start = start,
                          .dur = std::max<int64_t>(0, to_trace_ns(op.end) - start),
                          .kind = op.kind,
                          .name = string_id(op.name),
                          .bytes = int64_t(op.bytes),
                          .copy_kind = op.copy,
                          .correlation = op.correlation});
}

void Capture::State::add_transfer(uint32_t thread, const Transfer& t) {
  int64_t start = to_trace_ns(t.start);
  writer->add(TransferRow{.thread = thread,
                          .start = start,
                          .dur = std::max<int64_t>(0, to_trace_ns(t.end) - start),
                          .device = t.device,
                          .direction = t.direction,
                          .bytes = int64_t(t.bytes),
                          .synchronous = t.synchronous,
                          .implicit = t.implicit,
                          .host_memory = t.host_memory,
                          .callsite = t.callsite,
                          .correlation = t.correlation});
}

void Capture::State::add_memory_event(const RawEvent& ev) {
  const MemoryEvent& m = ev.memory.event;
  writer->add(MemoryEventRow{.device = m.device,
                             .time = to_trace_ns(ev.memory.time),
                             .kind = m.kind,
                             .bytes = int64_t(m.bytes),
                             .address = m.address,
                             .allocated = m.allocated,
                             .reserved = m.reserved,
                             .callsite = m.callsite});
}

void Capture::State::commit() {
  uint64_t dropped = 0;
  {
    Registry& reg = Registry::get();
    std::lock_guard lock(reg.mu);
    for (auto& e : reg.threads) {
      uint64_t d = e->ring.dropped.load(std::memory_order_relaxed) - e->dropped_base;
      dropped += d;
      writer->put(
          ThreadRow{.id = e->id, .process = e->process, .os_tid = e->os_tid, .name = e->name, .dropped_events = d});
    }
  }
  uint64_t rows = writer->staged();
  uint64_t lost;
  {
    std::lock_guard lock(stats_mu);
    stats.dropped = dropped;
    lost = stats.lost;
  }
  writer->set_meta("capture_end_ns", std::to_string(clock.to_monotonic_ns(ticks_now()) - origin_ns));
  writer->set_meta("dropped_events", std::to_string(dropped));
  writer->set_meta("lost_events", std::to_string(lost));
  try {
    writer->commit();
    std::lock_guard lock(stats_mu);
    stats.recorded += rows;
    ++stats.commits;
  } catch (const StoreError& e) {
    report_loss(e.what(), rows);
    // Say in the file what was lost, if it has room for that much.
    std::lock_guard lock(stats_mu);
    writer->set_meta("lost_events", std::to_string(stats.lost));
    writer->set_meta("status", "incomplete");
    try {
      writer->commit_meta_only();
    } catch (const StoreError&) {
    }
  }
}

void Capture::State::report_loss(const std::string& error, uint64_t rows) {
  std::lock_guard lock(stats_mu);
  stats.lost += rows;
  if (stats.error.empty()) {
    stats.error = error;
    std::fprintf(stderr, "loupe: %s; events are being lost, the program runs on\n", error.c_str());
    writer->set_meta("write_error", error);
  }
}

}  // namespace loupe::prof
