// Flows: the link between a launch (or a transfer) on a host thread and
// the device operation it started, by correlation id. Looked up when the mouse
// rests on one of them, not precomputed: an operation starts soon after
// its launch on the launch's own stream, so the search starts there and
// gives up after max_scan events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "loupe/prof/trace_model.h"

namespace loupe::view {

struct EventRef {
  uint32_t table = 0;  // index into model.device_ops or model.launches
  uint32_t index = 0;  // event index in that table
};

inline constexpr size_t kMaxFlowScan = 1 << 16;

// The device operation started by launch `index` of model.launches[table].
std::optional<EventRef> device_op_of_launch(const prof::TraceModel& model, uint32_t table, uint32_t index,
                                            size_t max_scan = kMaxFlowScan);
// The copy on the device of transfer `index` of model.transfers[table]
// (searched on the transfer's device, every stream).
std::optional<EventRef> device_op_of_transfer(const prof::TraceModel& model, uint32_t table, uint32_t index,
                                              size_t max_scan = kMaxFlowScan);
// The launch of device operation `index` of model.device_ops[table].
std::optional<EventRef> launch_of_device_op(const prof::TraceModel& model, uint32_t table, uint32_t index,
                                            size_t max_scan = kMaxFlowScan);

// A job's collective across its ranks (job_timeline.h): every other
// device operation with the correlation of operation `index` of
// model.device_ops[table], searched on each track outwards from that
// operation's start, `max_scan` events each way.
std::vector<EventRef> same_collective(const prof::TraceModel& model, uint32_t table, uint32_t index,
                                      size_t max_scan = kMaxFlowScan);

}  // namespace loupe::view
