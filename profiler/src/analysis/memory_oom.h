// The out-of-memory post-mortem of the memory rule: the request that
// failed, what was live at that moment by category and by allocation
// site, and whether the device was full or its cache fragmented, with the
// advice that fits (docs/analyses.md, "memory").
#pragma once

#include <cstddef>
#include <cstdint>

#include "analysis/context.h"
#include "analysis/memory_live.h"

namespace loupe::prof::analysis {

// Adds the post-mortem of the out-of-memory event `oom` of `me` to `f`:
// its title, its evidence and its suggestion. `capacity` is the device's
// memory, 0 when unknown; `peak_sites` what the finding lists at the peak.
void add_oom_post_mortem(Finding& f, const Context& ctx, const MemoryEvents& me, size_t oom, int64_t capacity,
                         const LiveSites& peak_sites);

}  // namespace loupe::prof::analysis
