// What the tooltip and the details panel say about one event: a title and
// (what, value) lines, worded with the profiler's units.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loupe/prof/trace_model.h"
#include "loupe/view/track_list.h"

namespace loupe::view {

struct EventDetails {
  std::string title;
  int64_t start = 0, end = 0;
  std::vector<std::pair<std::string, std::string>> lines;
};

// Event `index` of the table a lane of `kind` draws from (lane_kinds.h
// says which describer each kind uses).
EventDetails describe_event(const prof::TraceModel& model, LaneKind kind, uint32_t table, size_t index);

// Event `i` of one table.
EventDetails describe_span(const prof::TraceModel& model, const prof::HostSpans& s, size_t i);
EventDetails describe_launch(const prof::TraceModel& model, const prof::Launches& l, size_t i);
EventDetails describe_transfer(const prof::TraceModel& model, const prof::Transfers& t, size_t i);
EventDetails describe_device_op(const prof::TraceModel& model, const prof::DeviceOps& o, size_t i);
EventDetails describe_instant(const prof::TraceModel& model, const prof::Instants& n, size_t i);
EventDetails describe_compile(const prof::TraceModel& model, const prof::Compiles& c, size_t i);
EventDetails describe_collective(const prof::TraceModel& model, const prof::Collectives& c, size_t i);

// "examples/train.cpp:88 in int main()", or "" for call site 0.
std::string callsite_text(const prof::TraceModel& model, uint32_t callsite);

}  // namespace loupe::view
