// What was live on a device just after one of its memory events: the
// trace's blocks by allocation site and by category, and how much of what
// was held before the trace had been freed by then. The memory rule asks
// it at the peak and at an out-of-memory error.
#pragma once

#include <array>
#include <cstdint>
#include <string>
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

}  // namespace loupe::prof::analysis
