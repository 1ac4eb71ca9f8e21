#include "loupe/view/job_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "loupe/prof/units.h"

namespace loupe::view {

namespace {

struct Piece {
  int64_t start = 0, dur = 0;
  prof::DeviceOpKind kind = prof::DeviceOpKind::kernel;
  prof::StringId name = 0;
  uint64_t correlation = 0;
};

class ModelBuilder {
 public:
  explicit ModelBuilder(const prof::JobReport& r) : report_(r) {
    m_.strings.emplace_back();
    for (size_t i = 0; i < r.ranks.size(); ++i) device_of_[r.ranks[i]] = uint32_t(i);
  }

  prof::TraceModel build() {
    std::vector<std::vector<Piece>> by_device(report_.ranks.size());
    for (size_t c = 0; c < report_.timeline.size(); ++c) add_collective(report_.timeline[c], c + 1, by_device);
    for (uint32_t d = 0; d < by_device.size(); ++d) add_device(d, by_device[d]);
    return std::move(m_);
  }

 private:
  prof::StringId intern(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, prof::StringId(m_.strings.size()));
    if (inserted) m_.strings.push_back(s);
    return it->second;
  }

  void add_collective(const prof::JobCollective& c, uint64_t correlation, std::vector<std::vector<Piece>>& out) {
    std::string size = c.bytes > 0 ? " " + prof::format_bytes(c.bytes) : "";
    prof::StringId transfer = intern(fmt::format("{}{} (group {})", c.name, size, c.group.empty() ? "?" : c.group));
    prof::StringId wait = intern(fmt::format("waiting for rank {}", c.last_rank));
    for (const prof::JobCollective::Part& p : c.parts) {
      auto it = device_of_.find(p.rank);
      if (it == device_of_.end()) continue;
      std::vector<Piece>& pieces = out[it->second];
      int64_t from = std::min(std::max(p.arrival, c.last_arrival), p.end);
      if (from > p.arrival)
        pieces.push_back({p.arrival, from - p.arrival, prof::DeviceOpKind::sync, wait, correlation});
      if (p.end > from) pieces.push_back({from, p.end - from, prof::DeviceOpKind::kernel, transfer, correlation});
    }
  }

  void add_device(uint32_t device, std::vector<Piece>& pieces) {
    int64_t rank = report_.ranks[device];
    m_.devices.push_back({.id = device, .name = fmt::format("rank {}", rank), .kind = prof::DeviceKind::other});
    m_.streams.push_back({.device = device, .stream = 0, .name = fmt::format("rank {}", rank)});
    if (pieces.empty()) return;
    std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.start < b.start; });
    prof::DeviceOps ops;
    ops.device = device;
    ops.stream = 0;
    for (const Piece& p : pieces) {
      ops.start.push_back(p.start);
      ops.dur.push_back(p.dur);
      ops.kind.push_back(p.kind);
      ops.name.push_back(p.name);
      ops.bytes.push_back(0);
      ops.copy_kind.push_back(prof::CopyKind::none);
      ops.correlation.push_back(p.correlation);
      extend(p.start, p.start + p.dur);
    }
    m_.device_ops.push_back(std::move(ops));
  }

  void extend(int64_t start, int64_t end) {
    m_.start_ns = any_ ? std::min(m_.start_ns, start) : start;
    m_.end_ns = any_ ? std::max(m_.end_ns, end) : end;
    any_ = true;
  }

  const prof::JobReport& report_;
  prof::TraceModel m_;
  std::unordered_map<std::string, prof::StringId> ids_;
  std::map<int64_t, uint32_t> device_of_;
  bool any_ = false;
};

}  // namespace

prof::TraceModel job_timeline_model(const prof::JobReport& report) {
  prof::TraceModel m = ModelBuilder(report).build();
  m.path = report.dir;
  m.info.producer = "loupe job";
  m.info.status = "complete";
  return m;
}

}  // namespace loupe::view
