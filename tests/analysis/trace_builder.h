// Builds small traces by hand for the analysis tests: each test states its
// events, writes them through the real writer, and loads them back.
#pragma once

#include <string>

#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::test {

using namespace loupe::prof;

class TraceBuilder {
 public:
  explicit TraceBuilder(const std::string& path) : path_(path), w_(path, {}) {
    w_.put(ThreadRow{.id = 0, .process = 1, .os_tid = 1, .name = "main", .dropped_events = 0});
    w_.put(ThreadRow{.id = 1, .process = 1, .os_tid = 2, .name = "worker", .dropped_events = 0});
  }
  StringId str(const std::string& s) { return w_.intern(s); }
  // Threads 0 and 1 are in process 1; another thread, in any process.
  void thread(uint32_t id, int64_t process) {
    w_.put(ThreadRow{.id = id, .process = process, .os_tid = int64_t(id) + 1, .name = "t", .dropped_events = 0});
  }
  void device(uint32_t id, DeviceKind kind = DeviceKind::cuda, int64_t capacity = 0) {
    w_.put(DeviceRow{
        .id = id, .name = "dev" + std::to_string(id), .kind = kind, .memory_capacity = capacity, .copy_bandwidth = 0});
  }
  uint32_t callsite(const std::string& file, uint32_t line) {
    uint32_t id = ++callsites_;
    w_.put(CallSiteRow{.id = id, .file = str(file), .line = line, .function = str("fn")});
    return id;
  }
  void op(uint32_t dev, uint32_t stream, int64_t start, int64_t dur, uint64_t corr = 0,
          DeviceOpKind kind = DeviceOpKind::kernel, const std::string& name = "k") {
    w_.add(DeviceOpRow{.device = dev,
                       .stream = stream,
                       .start = start,
                       .dur = dur,
                       .kind = kind,
                       .name = str(name),
                       .bytes = 0,
                       .copy_kind = CopyKind::none,
                       .correlation = corr});
  }
  void copy(uint32_t dev, uint32_t stream, int64_t start, int64_t dur, CopyKind kind, int64_t bytes,
            uint64_t corr = 0) {
    w_.add(DeviceOpRow{.device = dev,
                       .stream = stream,
                       .start = start,
                       .dur = dur,
                       .kind = DeviceOpKind::memcpy,
                       .name = str("Memcpy"),
                       .bytes = bytes,
                       .copy_kind = kind,
                       .correlation = corr});
  }
  void launch(uint32_t thread, int64_t start, int64_t dur, uint64_t corr, uint32_t dev = 0, uint32_t stream = 0,
              const std::string& name = "launch") {
    w_.add(LaunchRow{.thread = thread,
                     .start = start,
                     .dur = dur,
                     .name = str(name),
                     .device = dev,
                     .stream = stream,
                     .correlation = corr});
  }
  void span(uint32_t thread, int64_t start, int64_t dur, const std::string& name, SpanKind kind = SpanKind::user,
            uint32_t depth = 0, uint32_t callsite = 0) {
    w_.add(HostSpanRow{.thread = thread,
                       .start = start,
                       .dur = dur,
                       .name = str(name),
                       .kind = kind,
                       .depth = depth,
                       .callsite = callsite});
  }
  void transfer(uint32_t thread, int64_t start, int64_t dur, CopyKind dir, bool sync, HostMemory mem, uint32_t site,
                int64_t bytes = 4, uint32_t dev = 0, uint64_t corr = 0) {
    w_.add(TransferRow{.thread = thread,
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
    w_.add(MemoryEventRow{.device = dev,
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
    CompileRow c;
    c.thread = thread;
    c.start = start;
    c.dur = dur;
    c.function = str(fn);
    c.signature = str(signature);
    c.kind = kind;
    c.reason = reason;
    c.function_object = object;
    c.callsite = site;
    w_.add(std::move(c));
  }
  void meta(const std::string& key, const std::string& value) { w_.set_meta(key, value); }
  void step(uint32_t thread, int64_t number, int64_t start, int64_t dur) {
    w_.add(StepRow{.thread = thread, .start = start, .dur = dur, .number = number});
  }
  TraceModel load() {
    w_.set_meta("status", "complete");
    w_.close();
    return load_trace(path_);
  }

 private:
  std::string path_;
  TraceWriter w_;
  uint32_t callsites_ = 0;
};

}  // namespace loupe::test
