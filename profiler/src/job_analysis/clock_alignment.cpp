// Aligning a rank's clock. A collective ends at nearly the same instant on
// every rank that took part (none can finish before the last has sent its
// part), so the difference of two ranks' clocks is the difference of the
// ends they recorded for the same collectives; the median of those
// differences ignores the few a late kernel-end record skews. A rank is
// aligned as it is added, against the ends the first aligned rank of each
// of its collectives recorded, so a rank that shares a group only with
// another non-reference rank is still aligned through it.
#include "job_analysis/clock_alignment.h"

#include <cstdlib>
#include <map>

namespace loupe::prof::job {

std::optional<RankClock> align_rank(const CollectiveTable& table, const std::vector<KindRef>& kinds,
                                    const RankSummary& s, int64_t origin, const std::vector<RankSummary>& ranks) {
  std::vector<int64_t> differences;
  std::map<uint32_t, uint64_t> anchors;  // rank index: collectives compared with its ends
  for (const RankSummary::Collective& c : s.collectives) {
    uint32_t id = table.find(kinds[c.kind], c);
    if (id == CollectiveTable::kNone || !table.records[id].anchored) continue;
    const Record& r = table.records[id];
    differences.push_back(origin + c.end - r.anchor_end);
    ++anchors[r.anchor];
  }
  if (differences.empty()) return std::nullopt;
  int64_t median = quantile(differences, 0.5);
  int64_t residual = 0;
  for (int64_t d : differences) residual = std::max(residual, std::abs(d - median));
  auto via = anchors.begin();
  for (auto it = anchors.begin(); it != anchors.end(); ++it) {
    if (it->second > via->second) via = it;
  }
  return RankClock{.rank = s.rank,
                   .aligned = true,
                   .via = ranks[via->first].rank,
                   .matched = differences.size(),
                   .offset_ns = median,
                   .residual_ns = residual};
}

}  // namespace loupe::prof::job
