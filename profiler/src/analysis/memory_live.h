// What was live on a device just after one of its memory events: the
// trace's blocks by allocation site and by category, and how much of what
// was held before the trace had been freed by then. The memory rule asks
// it at the peak and at an out-of-memory error.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/context.h"
#include "analysis/memory_categories.h"

namespace loupe::prof::analysis {

// A block of the trace: its size, call site and when it was allocated.
struct Block {
  int64_t bytes = 0;
  uint32_t callsite = 0;
  int64_t time = 0;
};
using BlocksByAddress = std::unordered_map<uint64_t, Block>;

// The blocks allocated by events [from, to) and not freed by them. A free
// of a block those events did not allocate adds its bytes to `unseen_freed`
// when given (memory held from before them).
BlocksByAddress replay(const MemoryEvents& me, size_t from, size_t to, int64_t* unseen_freed = nullptr);

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
