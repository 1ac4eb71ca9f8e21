// Aligning a rank's clock with the job's from the collectives it shares
// with the ranks already aligned.
#pragma once

#include <optional>
#include <vector>

#include "job_analysis/collective_table.h"

namespace loupe::prof::job {

// `s`'s clock against the anchors of the records its collectives match
// (`kinds`: table.intern(s); `origin`: its origin after the reference
// rank's), or nothing when it shares none with an aligned rank yet.
std::optional<RankClock> align_rank(const CollectiveTable& table, const std::vector<KindRef>& kinds,
                                    const RankSummary& s, int64_t origin, const std::vector<RankSummary>& ranks);

}  // namespace loupe::prof::job
