// Events that reach a capture already timed, from collectors other than the
// rings: the CUPTI collector hands over each activity buffer it has read as
// one batch. Times are CLOCK_MONOTONIC nanoseconds (the capture subtracts
// its origin); `thread` fields hold OS thread ids (the capture maps them to
// its thread ids, registering threads it has not seen).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loupe/prof/trace_rows.h"

namespace loupe::prof::detail {

// Strings are carried as text; the capture interns them.
struct ExternalEvents {
  struct Span {
    int64_t os_tid, start, end;
    std::string name;
    SpanKind kind;
    uint32_t depth;
  };
  struct Op {
    uint32_t device, stream;
    int64_t start, end;
    DeviceOpKind kind;
    std::string name;
    int64_t bytes;
    CopyKind copy;
    uint64_t correlation;
  };
  struct LaunchCall {
    int64_t os_tid, start, end;
    std::string name;
    uint32_t device, stream;
    uint64_t correlation;
  };
  struct Copy {
    int64_t os_tid, start, end;
    uint32_t device;
    CopyKind direction;
    int64_t bytes;
    bool synchronous;
    HostMemory host_memory;
    uint64_t correlation;
  };
  struct Memory {
    uint32_t device;
    int64_t time;
    MemoryEventKind kind;
    int64_t bytes;
    uint64_t address;
    int64_t allocated, reserved;
  };
  std::vector<Span> spans;
  std::vector<Op> ops;
  std::vector<LaunchCall> launches;
  std::vector<Copy> copies;
  std::vector<Memory> memory;
  std::vector<DeviceRow> devices;
  uint64_t skipped = 0;  // records the collector could not use

  bool empty() const {
    return spans.empty() && ops.empty() && launches.empty() && copies.empty() && memory.empty() && devices.empty() &&
           skipped == 0;
  }
};

// Queues a batch for the active capture; dropped when none is active.
// Returns whether a capture took it.
bool submit_external(ExternalEvents&& batch);

}  // namespace loupe::prof::detail
