#include "job_analysis/collective_table.h"

namespace loupe::prof::job {

size_t CollectiveTable::KeyHash::operator()(const Key& k) const {
  uint64_t h = k.group * 0x9e3779b97f4a7c15ull;
  h ^= uint64_t(k.step) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
  h ^= uint64_t(k.index) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return size_t(h);
}

uint32_t CollectiveTable::id_of(std::unordered_map<std::string, uint32_t>& ids, const std::string& text) {
  return ids.try_emplace(text, uint32_t(ids.size())).first->second;
}

std::vector<KindRef> CollectiveTable::intern(const RankSummary& s) {
  std::vector<KindRef> out;
  out.reserve(s.kinds.size());
  for (const RankSummary::Kind& k : s.kinds) {
    KindRef ref{.group = id_of(groups_, k.group), .name = id_of(names_, k.name)};
    auto [it, inserted] =
        kind_ids_.try_emplace({ref.group, ref.name, k.in_bytes, k.out_bytes, k.group_size}, uint32_t(kinds.size()));
    if (inserted) {
      kinds.push_back(k);
      kind_names_.push_back(ref.name);
    }
    ref.kind = it->second;
    out.push_back(ref);
  }
  return out;
}

uint32_t CollectiveTable::find(const KindRef& kind, const RankSummary::Collective& c) const {
  auto it = index_.find(Key{kind.group, c.step, c.index});
  if (it == index_.end() || kind_names_[records[it->second].kind] != kind.name) return kNone;
  return it->second;
}

uint32_t CollectiveTable::find_or_add(const KindRef& kind, const RankSummary::Collective& c) {
  auto [it, inserted] = index_.try_emplace(Key{kind.group, c.step, c.index}, uint32_t(records.size()));
  if (inserted) {
    records.push_back({.kind = kind.kind, .step_number = c.step, .index = c.index});
    return it->second;
  }
  return kind_names_[records[it->second].kind] == kind.name ? it->second : kNone;
}

}  // namespace loupe::prof::job
