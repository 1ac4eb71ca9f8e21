// Matching a collective across ranks. Every rank of a process group calls
// its collectives in the same order (NCCL and gloo require it), so the
// n-th collective of a group on one rank is the n-th on another. Counting
// within each step rather than from the trace's start keeps a rank whose
// trace began a few collectives earlier, or lost one, from shifting every
// match after it; a match whose collective differs by name is refused.
#include <unordered_map>

#include "job_analysis/job_context.h"

namespace loupe::prof::job {

namespace {

struct Key {
  size_t group;
  int64_t step, index;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = k.group * 0x9e3779b97f4a7c15ull;
    h ^= uint64_t(k.step) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h ^= uint64_t(k.index) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return size_t(h);
  }
};

}  // namespace

std::vector<Matched> match_collectives(std::vector<RankSummary>& ranks) {
  std::unordered_map<std::string, size_t> groups;
  std::unordered_map<Key, size_t, KeyHash> index;
  std::vector<Matched> all;
  for (size_t r = 0; r < ranks.size(); ++r) {
    RankSummary& s = ranks[r];
    int64_t origin = s.origin_wall_ns - ranks.front().origin_wall_ns;  // within +-2^60 (reduce_job)
    for (const RankSummary::Collective& c : s.collectives) {
      const RankSummary::Kind& kind = s.kinds[c.kind];
      size_t group = groups.try_emplace(kind.group, groups.size()).first->second;
      auto [it, inserted] = index.try_emplace(Key{group, c.step, c.index}, all.size());
      if (inserted) all.push_back({.kind = &kind, .step_number = c.step, .index = c.index});
      Matched& m = all[it->second];
      if (m.kind->name != kind.name) continue;  // not the same collective: the orders differ
      m.ranks.push_back({r, origin + c.start, origin + c.end});
    }
    std::vector<RankSummary::Collective>().swap(s.collectives);
  }
  std::vector<Matched> matched;
  matched.reserve(all.size());
  for (Matched& m : all) {
    if (m.ranks.size() >= 2) matched.push_back(std::move(m));
  }
  return matched;
}

}  // namespace loupe::prof::job
