// Highlighting a name picked in a panel (a statistics row, a diff row, a
// finding's evidence): for every lane, the sub-lane of its events with
// that name. Built once when the name is picked (one pass over the
// trace); drawn every frame through the same level-of-detail pass.
#pragma once

#include <string>
#include <vector>

#include "loupe/prof/trace_model.h"
#include "loupe/view/lane.h"
#include "loupe/view/track_list.h"

namespace loupe::view {

struct NameHighlight {
  std::string name;
  uint64_t matches = 0;
  std::vector<std::vector<Lane>> lanes;  // [track][lane], parallel to the list
  bool empty() const { return matches == 0; }
};

// The string id of `text` in the model, if it is there.
bool find_string(const prof::TraceModel& model, const std::string& text, prof::StringId* id);

NameHighlight highlight_name(const prof::TraceModel& model, const TrackList& list, const std::string& name);

}  // namespace loupe::view
