// One plain struct per table row of the trace file, as the writer takes
// them. Times are nanoseconds since the trace's origin (meta origin_*);
// names are string ids from TraceWriter::intern(). docs/trace-format.md
// describes each column.
#pragma once

#include <cstdint>
#include <string>

#include "loupe/prof/trace_format.h"

namespace loupe::prof {

using StringId = uint32_t;

struct DeviceRow {
  uint32_t id = 0;
  std::string name;
  DeviceKind kind = DeviceKind::cpu;
  int64_t memory_capacity = 0;
  int64_t copy_bandwidth = 0;
};

struct StreamRow {
  uint32_t device = 0, stream = 0;
  std::string name;
};

struct ThreadRow {
  uint32_t id = 0;
  int64_t process = 0;   // OS process id
  int64_t os_tid = 0;    // OS thread id
  std::string name;
  uint64_t dropped_events = 0;
};

struct CallSiteRow {
  uint32_t id = 0;  // > 0
  StringId file = 0;
  uint32_t line = 0;
  StringId function = 0;
};

struct HostSpanRow {
  uint32_t thread = 0;
  int64_t start = 0, dur = 0;
  StringId name = 0;
  SpanKind kind = SpanKind::user;
  uint32_t depth = 0;
  uint32_t callsite = 0;
};

struct InstantRow {
  uint32_t thread = 0;
  int64_t time = 0;
  StringId name = 0;
  SpanKind kind = SpanKind::user;
};

struct CounterRow {
  StringId name = 0;
  int64_t time = 0;
  double value = 0;
};

struct DeviceOpRow {
  uint32_t device = 0, stream = 0;
  int64_t start = 0, dur = 0;
  DeviceOpKind kind = DeviceOpKind::kernel;
  StringId name = 0;
  int64_t bytes = 0;
  CopyKind copy_kind = CopyKind::none;
  uint64_t correlation = 0;
};

struct LaunchRow {
  uint32_t thread = 0;
  int64_t start = 0, dur = 0;
  StringId name = 0;
  uint32_t device = 0, stream = 0;
  uint64_t correlation = 0;
};

struct TransferRow {
  uint32_t thread = 0;
  int64_t start = 0, dur = 0;
  uint32_t device = 0;
  CopyKind direction = CopyKind::host_to_device;
  int64_t bytes = 0;
  bool synchronous = false;
  bool implicit = false;
  HostMemory host_memory = HostMemory::unknown;
  uint32_t callsite = 0;
  uint64_t correlation = 0;
};

struct MemoryEventRow {
  uint32_t device = 0;
  int64_t time = 0;
  MemoryEventKind kind = MemoryEventKind::alloc;
  int64_t bytes = 0;
  uint64_t address = 0;
  int64_t allocated = 0, reserved = 0;
  uint32_t callsite = 0;
};

struct CompileRow {
  uint32_t thread = 0;
  int64_t start = 0, dur = 0;
  StringId function = 0, signature = 0;
  CompileKind kind = CompileKind::miss;
  std::string reason;
  int64_t trace_ns = 0, optimize_ns = 0, codegen_ns = 0;
  uint32_t nodes = 0, kernels = 0;
  std::string ir;
  uint32_t callsite = 0;
  uint64_t function_object = 0;
};

struct StepRow {
  uint32_t thread = 0;
  int64_t start = 0, dur = 0;
  int64_t number = 0;
};

}  // namespace loupe::prof
