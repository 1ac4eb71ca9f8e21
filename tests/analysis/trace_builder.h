// Builds small traces by hand for the analysis tests: each test states its
// events, writes them through the real writer, and loads them back.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::test {

using namespace loupe::prof;

// An op on device 0 and the call on thread 0 that launched it, linked by
// their correlation id.
struct LaunchedOp {
  int64_t launch = 0;      // when the launch call began
  int64_t launch_dur = 5;  // how long the call took
  int64_t start = 0;       // when the op ran
  int64_t dur = 100;
  uint64_t corr = 0;  // links the two; 0 links nothing
  uint32_t stream = 0;
  DeviceOpKind kind = DeviceOpKind::kernel;
  std::string name = "k";
  std::string call = "launch";  // the launch call's name
};

// Movable, so that a test's helpers can hand back a trace they began.
class TraceBuilder {
 public:
  explicit TraceBuilder(const std::string& path)
      : path_(path), w_(std::make_unique<TraceWriter>(path, WriterOptions{})) {
    w_->put(ThreadRow{.id = 0, .process = 1, .os_tid = 1, .name = "main", .dropped_events = 0});
    w_->put(ThreadRow{.id = 1, .process = 1, .os_tid = 2, .name = "worker", .dropped_events = 0});
  }
  StringId str(const std::string& s) { return w_->intern(s); }
  // Threads 0 and 1 are in process 1; another thread, in any process.
  void thread(uint32_t id, int64_t process) {
    w_->put(ThreadRow{.id = id, .process = process, .os_tid = int64_t(id) + 1, .name = "t", .dropped_events = 0});
  }
  void device(uint32_t id, DeviceKind kind = DeviceKind::cuda, int64_t capacity = 0) {
    w_->put(DeviceRow{
        .id = id, .name = "dev" + std::to_string(id), .kind = kind, .memory_capacity = capacity, .copy_bandwidth = 0});
  }
  uint32_t callsite(const std::string& file, uint32_t line) {
    uint32_t id = ++callsites_;
    w_->put(CallSiteRow{.id = id, .file = str(file), .line = line, .function = str("fn")});
    return id;
  }
  void op(uint32_t dev, uint32_t stream, int64_t start, int64_t dur, uint64_t corr = 0,
          DeviceOpKind kind = DeviceOpKind::kernel, const std::string& name = "k") {
    device_op(dev, stream, start, dur, corr, kind, name, 0, CopyKind::none);
  }
  void copy(uint32_t dev, uint32_t stream, int64_t start, int64_t dur, CopyKind kind, int64_t bytes,
            uint64_t corr = 0) {
    device_op(dev, stream, start, dur, corr, DeviceOpKind::memcpy, "Memcpy", bytes, kind);
  }
  void launch(uint32_t thread, int64_t start, int64_t dur, uint64_t corr, uint32_t dev = 0, uint32_t stream = 0,
              const std::string& name = "launch") {
    w_->add(LaunchRow{.thread = thread,
                      .start = start,
                      .dur = dur,
                      .name = str(name),
                      .device = dev,
                      .stream = stream,
                      .correlation = corr});
  }
  // The op and its launch call.
  void launched(const LaunchedOp& o) {
    launch(0, o.launch, o.launch_dur, o.corr, 0, o.stream, o.call);
    op(0, o.stream, o.start, o.dur, o.corr, o.kind, o.name);
  }
  void span(uint32_t thread, int64_t start, int64_t dur, const std::string& name, SpanKind kind = SpanKind::user,
            uint32_t depth = 0, uint32_t callsite = 0) {
    w_->add(HostSpanRow{.thread = thread,
                        .start = start,
                        .dur = dur,
                        .name = str(name),
                        .kind = kind,
                        .depth = depth,
                        .callsite = callsite});
  }
  void transfer(uint32_t thread, int64_t start, int64_t dur, CopyKind dir, bool sync, HostMemory mem, uint32_t site,
                int64_t bytes = 4, uint32_t dev = 0, uint64_t corr = 0) {
    w_->add(TransferRow{.thread = thread,
                        .start = start,
                        .dur = dur,
                        .device = dev,
                        .direction = dir,
                        .bytes = bytes,
                        .synchronous = sync,
                        .implicit = false,
                        .host_memory = mem,
                        .callsite = site,
                        .correlation = corr});
  }
  void memory(uint32_t dev, int64_t time, MemoryEventKind kind, int64_t bytes, uint64_t addr, int64_t allocated,
              int64_t reserved, uint32_t site = 0) {
    w_->add(MemoryEventRow{.device = dev,
                           .time = time,
                           .kind = kind,
                           .bytes = bytes,
                           .address = addr,
                           .allocated = allocated,
                           .reserved = reserved,
                           .callsite = site});
  }
  void compile(uint32_t thread, int64_t start, int64_t dur, const std::string& fn, CompileKind kind,
               const std::string& reason = "", const std::string& signature = "sig", uint64_t object = 1,
               uint32_t site = 0) {
    w_->add(CompileRow{.thread = thread,
                       .start = start,
                       .dur = dur,
                       .function = str(fn),
                       .signature = str(signature),
                       .kind = kind,
                       .reason = reason,
                       .callsite = site,
                       .function_object = object});
  }
  // A synchronising call on `thread` and what it waited for (syncs).
  void sync(uint32_t thread, int64_t start, int64_t dur, SyncKind kind, uint32_t stream = kUnknownStream,
            uint32_t event_stream = kUnknownStream, int64_t recorded_at = kUnknownTime) {
    w_->add(SyncRow{.thread = thread,
                    .start = start,
                    .dur = dur,
                    .kind = kind,
                    .device = 0,
                    .stream = stream,
                    .event_stream = event_stream,
                    .recorded_at = recorded_at});
  }
  void meta(const std::string& key, const std::string& value) { w_->set_meta(key, value); }
  void step(uint32_t thread, int64_t number, int64_t start, int64_t dur) {
    w_->add(StepRow{.thread = thread, .start = start, .dur = dur, .number = number});
  }
  // Steps numbered 0, 1, ... on thread 0, back to back from `from`, of the
  // given durations, each running an op on device 0 from `op_at` into it
  // for `op_ns`; returns where each step starts.
  std::vector<int64_t> steps(const std::vector<int64_t>& durations, int64_t op_at, int64_t op_ns, int64_t from = 0) {
    std::vector<int64_t> starts;
    int64_t start = from;
    for (int64_t dur : durations) {
      step(0, int64_t(starts.size()), start, dur);
      op(0, 0, start + op_at, op_ns);
      starts.push_back(start);
      start += dur;
    }
    return starts;
  }
  TraceModel load() {
    w_->set_meta("status", "complete");
    w_->close();
    return load_trace(path_);
  }

 private:
  void device_op(uint32_t dev, uint32_t stream, int64_t start, int64_t dur, uint64_t corr, DeviceOpKind kind,
                 const std::string& name, int64_t bytes, CopyKind copy_kind) {
    w_->add(DeviceOpRow{.device = dev,
                        .stream = stream,
                        .start = start,
                        .dur = dur,
                        .kind = kind,
                        .name = str(name),
                        .bytes = bytes,
                        .copy_kind = copy_kind,
                        .correlation = corr});
  }

  std::string path_;
  std::unique_ptr<TraceWriter> w_;
  uint32_t callsites_ = 0;
};

}  // namespace loupe::test
