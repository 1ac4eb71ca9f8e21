// What the memory rules share about blocks: where one was allocated, and
// what a device held before its first memory event.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/context.h"

namespace loupe::prof::analysis {

// Where a block was allocated: its call site and callers, or, in a trace without call
// sites (a Kineto trace's memory events carry none), the chain of ops open
// at that time on the one thread inside an op then. With several threads
// inside ops at once it cannot be told which allocated: "" (unknown).
std::string allocation_site(const Context& ctx, uint32_t callsite, int64_t t);

// The thread of a memory event of a trace whose memory events carry no
// thread: the one thread inside an op at time t, if exactly one was.
struct OpThread {
  std::optional<uint32_t> thread;
  bool several = false;  // more than one was: whose event it was cannot be told
};
OpThread op_thread_at(const Context& ctx, int64_t t);

// Whether a meta entry listing device ids ("0,2") names this device.
bool meta_lists_device(const TraceModel& m, const char* key, uint32_t device);

// The running total before the first event: what it reports, less what
// that event itself allocated or freed. Non-empty events only.
int64_t allocated_before(const MemoryEvents& me);

// The running total just after time t: the last event at or before t, or
// what was held before the first event when none is.
int64_t allocated_at(const MemoryEvents& me, int64_t t);

}  // namespace loupe::prof::analysis
