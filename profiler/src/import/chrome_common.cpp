#include "import/chrome_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace loupe::prof::import {

uint32_t LaneThreads::thread(uint32_t lane) {
  auto [it, inserted] = by_lane_.try_emplace(lane, uint32_t(lanes_.size() + 1));
  if (inserted) lanes_.push_back(lane);
  return it->second;
}

void LaneThreads::emit(ImportedTrace& out) const {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& lane = raw_.lanes[lanes_[i]];
    ThreadRow row;
    row.id = uint32_t(i + 1);
    row.process = lane_number(lane.pid).value_or(0);
    row.os_tid = lane_number(lane.tid).value_or(0);
    if (auto it = raw_.thread_names.find(lanes_[i]); it != raw_.thread_names.end() && !it->second.empty()) {
      row.name = it->second;
    } else if (lane.tid.is_string) {
      row.name = lane_id_text(lane.tid, strings_);
    } else if (auto p = raw_.process_names.find(lane.pid); p != raw_.process_names.end() && !p->second.empty()) {
      row.name = fmt::format("{} thread {}", p->second, lane.tid.value);
    } else {
      row.name = fmt::format("thread {}", lane.tid.value);
    }
    out.threads.push_back(std::move(row));
  }
}

std::string lane_id_text(LaneId id, const TraceWriter& strings) {
  return id.is_string ? std::string(strings.text(StringId(id.value))) : std::to_string(id.value);
}

void guess_wall_clock(const ChromeTrace& raw, ImportedTrace& out) {
  int64_t first = raw.min_ts;
  if (first != std::numeric_limits<int64_t>::max() && first > int64_t(946684800) * 1'000'000'000) {
    out.wall_clock_known = true;
    out.wall_ns_at_zero = 0;
  }
}

void complete_begin_end(ChromeTrace& raw) {
  if (raw.begin_end_events == 0) return;
  std::map<uint32_t, std::vector<size_t>> open;  // lane -> indices of open "B" events
  std::vector<uint8_t> drop(raw.events.size(), 0);
  bool any = false;
  for (size_t i = 0; i < raw.events.size(); ++i) {
    ChromeEvent& e = raw.events[i];
    if (e.ph == 'B') {
      open[e.lane].push_back(i);
      any = true;
    } else if (e.ph == 'E') {
      any = true;
      drop[i] = 1;
      auto& stack = open[e.lane];
      if (stack.empty()) {
        ++raw.skipped["'E' events without a matching 'B'"];
        continue;
      }
      ChromeEvent& b = raw.events[stack.back()];
      stack.pop_back();
      b.ph = 'X';
      b.dur = std::max<int64_t>(0, e.ts - b.ts);
    }
  }
  if (!any) return;
  for (auto& [lane, stack] : open) {
    for (size_t i : stack) {
      drop[i] = 1;
      ++raw.skipped["'B' events without a matching 'E'"];
    }
  }
  size_t out = 0;
  for (size_t i = 0; i < raw.events.size(); ++i) {
    if (!drop[i]) raw.events[out++] = raw.events[i];
  }
  raw.events.resize(out);
}

}  // namespace loupe::prof::import
