// The job's collectives, one Record each, found by (process group, step,
// position among the group's collectives of that step). Every rank of a
// process group calls its collectives in the same order (NCCL and gloo
// require it), so the n-th collective of a group on one rank is the n-th
// on another. Counting within each step rather than from the trace's
// start keeps a rank whose trace began a few collectives earlier, or lost
// one, from shifting every match after it; a match whose collective
// differs by name is refused.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "job_analysis/job_context.h"

namespace loupe::prof::job {

// A rank's kind of collective as the job knows it.
struct KindRef {
  uint32_t kind = 0;   // index into CollectiveTable::kinds
  uint32_t group = 0;  // the process group's id
  uint32_t name = 0;   // the collective's name's id
};

class CollectiveTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // The job's ids of a rank's kinds, by the rank's kind index (new kinds
  // are added).
  std::vector<KindRef> intern(const RankSummary& s);
  // The record of a rank's collective, or kNone: none yet, or one of
  // another name.
  uint32_t find(const KindRef& kind, const RankSummary::Collective& c) const;
  // The same, adding a record when there is none yet.
  uint32_t find_or_add(const KindRef& kind, const RankSummary::Collective& c);

  std::vector<Record> records;           // in the order first seen
  std::vector<RankSummary::Kind> kinds;  // the first rank's of each kind

 private:
  struct Key {
    uint32_t group;
    int64_t step, index;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  uint32_t id_of(std::unordered_map<std::string, uint32_t>& ids, const std::string& text);

  std::unordered_map<std::string, uint32_t> groups_, names_;
  std::map<std::tuple<uint32_t, uint32_t, int64_t, int64_t, int64_t>, uint32_t> kind_ids_;
  std::vector<uint32_t> kind_names_;  // by kind: its name's id
  std::unordered_map<Key, uint32_t, KeyHash> index_;
};

}  // namespace loupe::prof::job
