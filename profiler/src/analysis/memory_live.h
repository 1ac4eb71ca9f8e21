// What was live on a device just after one of its memory events: the
// trace's blocks by allocation site and by category, and how much of what
// was held before the trace had been freed by then. The memory rule asks
// it at the peak and at an out-of-memory error.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/context.h"
#include "analysis/memory_categories.h"

namespace loupe::prof::analysis {

// (site, (bytes, blocks)), most bytes first; site "" is unknown.
using LiveSites = std::vector<std::pair<std::string, std::pair<int64_t, uint64_t>>>;

struct LiveBlocks {
  LiveSites sites;
  std::array<int64_t, kBlockCategories> by_category{};  // bytes
  int64_t freed_from_before = 0;                        // frees of blocks the trace never allocated, up to then
};

// Replays events 0..index: a free of a block the trace never allocated
// releases memory held from before the trace.
LiveBlocks live_after(const Context& ctx, const MemoryEvents& me, size_t index);

// The categories holding bytes, in BlockCategory's order; none at all when
// no block has one but unknown: the ops around them told nothing.
std::vector<std::pair<BlockCategory, int64_t>> told_categories(const LiveBlocks& live);

// A finding's evidence of what was live at `when` ("peak", "the
// out-of-memory"): "at WHEN: CATEGORY" rows, and the five sites with the
// most bytes as "live at WHEN: SITE" rows.
void add_live_categories(Finding& f, std::string_view when, const LiveBlocks& live);
void add_live_sites(Finding& f, std::string_view when, const LiveSites& sites);

}  // namespace loupe::prof::analysis
