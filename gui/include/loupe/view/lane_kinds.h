// What the viewer draws and says of each kind of lane, in one place, as
// Tracy's TimelineItem does: the names of its events (the text in their
// boxes, and what a highlighted name matches), their colour, and their
// details. A new kind is a value of LaneKind (track_list.h), its entry in
// lane_kinds.cpp, and the lanes track_list.cpp builds of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loupe/prof/trace_model.h"
#include "loupe/view/event_details.h"
#include "loupe/view/palette.h"
#include "loupe/view/track_list.h"

namespace loupe::view {

struct LaneKindInfo {
  // The name of each event of model table `table`, as string ids; nullptr
  // for a kind whose events have none (transfers).
  const prof::StringId* (*names)(const prof::TraceModel& model, uint32_t table);
  Color (*color)(const prof::TraceModel& model, const TrackLane& lane, size_t event);
  EventDetails (*describe)(const prof::TraceModel& model, uint32_t table, size_t event);
};
const LaneKindInfo& lane_kind_info(LaneKind kind);

// An event's name ("" for a kind whose events have none) and colour.
const std::string& event_name(const prof::TraceModel& model, LaneKind kind, uint32_t table, size_t event);
Color event_color(const prof::TraceModel& model, const TrackLane& lane, size_t event);

}  // namespace loupe::view
