#include "loupe/view/highlight.h"

#include "loupe/view/lane_kinds.h"

namespace loupe::view {

bool find_string(const prof::TraceModel& model, const std::string& text, prof::StringId* id) {
  for (size_t i = 0; i < model.strings.size(); ++i) {
    if (model.strings[i] == text) {
      *id = prof::StringId(i);
      return true;
    }
  }
  return false;
}

NameHighlight highlight_name(const prof::TraceModel& model, const TrackList& list, const std::string& name) {
  NameHighlight h;
  h.name = name;
  h.lanes.resize(list.tracks.size());
  for (size_t t = 0; t < list.tracks.size(); ++t) h.lanes[t].resize(list.tracks[t].lanes.size());
  prof::StringId id = 0;
  if (!find_string(model, name, &id)) return h;
  for (size_t t = 0; t < list.tracks.size(); ++t) {
    for (size_t l = 0; l < list.tracks[t].lanes.size(); ++l) {
      const TrackLane& tl = list.tracks[t].lanes[l];
      const prof::StringId* names = lane_kind_info(tl.kind).names(model, tl.table);
      if (!names) continue;
      Lane sub;
      sub.start = tl.lane.start;
      sub.dur = tl.lane.dur;
      sub.ends_sorted = tl.lane.ends_sorted;
      sub.max_dur = tl.lane.max_dur;
      for (size_t k = 0; k < tl.lane.size(); ++k) {
        size_t e = tl.lane.event(k);
        if (names[e] == id) sub.index.push_back(uint32_t(e));
      }
      sub.count = sub.index.size();
      index_lane(sub);
      h.matches += sub.count;
      h.lanes[t][l] = std::move(sub);
    }
  }
  return h;
}

}  // namespace loupe::view
