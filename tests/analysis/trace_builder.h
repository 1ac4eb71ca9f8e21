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
    w_.put(ThreadRow{0, 1, 1, "main", 0});
    w_.put(ThreadRow{1, 1, 2, "worker", 0});
  }
  StringId str(const std::string& s) { return w_.intern(s); }
  // Threads 0 and 1 are in process 1; another thread, in any process.
  void thread(uint32_t id, int64_t process) { w_.put(ThreadRow{id, process, int64_t(id) + 1, "t", 0}); }
  void device(uint32_t id, DeviceKind kind = DeviceKind::cuda, int64_t capacity = 0) {
    w_.put(DeviceRow{id, "dev" + std::to_string(id), kind, capacity, 0});
  }
  uint32_t callsite(const std::string& file, uint32_t line) {
    uint32_t id = ++callsites_;
    w_.put(CallSiteRow{id, str(file), line, str("fn")});
    return id;
  }
  void op(uint32_t dev, uint32_t stream, int64_t start, int64_t dur, uint64_t corr = 0,
          DeviceOpKind kind = DeviceOpKind::kernel, const std::string& name = "k") {
    w_.add(DeviceOpRow{dev, stream, start, dur, kind, str(name), 0, CopyKind::none, corr});
  }
  void copy(uint32_t dev, uint32_t stream, int64_t start, int64_t dur, CopyKind kind, int64_t bytes,
            uint64_t corr = 0) {
    w_.add(DeviceOpRow{dev, stream, start, dur, DeviceOpKind::memcpy, str("Memcpy"), bytes, kind, corr});
  }
  void launch(uint32_t thread, int64_t start, int64_t dur, uint64_t corr, uint32_t dev = 0, uint32_t stream = 0,
              const std::string& name = "launch") {
    w_.add(LaunchRow{thread, start, dur, str(name), dev, stream, corr});
  }
  void span(uint32_t thread, int64_t start, int64_t dur, const std::string& name, SpanKind kind = SpanKind::user,
            uint32_t depth = 0, uint32_t callsite = 0) {
    w_.add(HostSpanRow{thread, start, dur, str(name), kind, depth, callsite});
  }
  void transfer(uint32_t thread, int64_t start, int64_t dur, CopyKind dir, bool sync, HostMemory mem, uint32_t site,
                int64_t bytes = 4, uint32_t dev = 0, uint64_t corr = 0) {
    w_.add(TransferRow{thread, start, dur, dev, dir, bytes, sync, false, mem, site, corr});
  }
  void memory(uint32_t dev, int64_t time, MemoryEventKind kind, int64_t bytes, uint64_t addr, int64_t allocated,
              int64_t reserved, uint32_t site = 0) {
    w_.add(MemoryEventRow{dev, time, kind, bytes, addr, allocated, reserved, site});
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
    w_.add(StepRow{thread, start, dur, number});
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
