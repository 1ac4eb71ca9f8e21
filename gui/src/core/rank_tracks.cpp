// A rank's own trace appended to a job's model (job_timeline.h). Every
// table is copied column by column from trace_tables.h's lists, so a new
// column is carried without a change here; what a column holds decides
// what happens to it: times move onto the job's aligned clock, string ids
// and call sites are re-numbered into the job's model, thread and device
// ids are replaced by the ids the rank's threads and devices get there,
// and correlation ids are moved apart from the other ranks'.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "loupe/view/job_timeline.h"

namespace loupe::view {

namespace {

using prof::StringId;

class RankAppender {
 public:
  RankAppender(JobTimeline& out, const prof::TraceModel& in, int64_t rank, size_t position, int64_t shift)
      : out_(out), m_(out.model), in_(in), rank_(rank), position_(position), shift_(shift) {
    for (StringId i = 0; i < m_.strings.size(); ++i) ids_.try_emplace(m_.strings[i], i);
    // Correlation ids of the job's own pieces count from 1; each rank's
    // own ids move above every id already in the model.
    correlation_base_ = uint64_t(position + 1) << 40;
  }

  void append() {
    add_ids();
    append_tables(in_.host_spans, m_.host_spans);
    append_tables(in_.instants, m_.instants);
    append_tables(in_.launches, m_.launches);
    append_tables(in_.transfers, m_.transfers);
    append_tables(in_.compiles, m_.compiles);
    append_tables(in_.device_ops, m_.device_ops);
    append_tables(in_.memory, m_.memory);
    if (in_.end_ns <= in_.start_ns) return;
    bool empty = m_.end_ns <= m_.start_ns;
    m_.start_ns = empty ? in_.start_ns + shift_ : std::min(m_.start_ns, in_.start_ns + shift_);
    m_.end_ns = empty ? in_.end_ns + shift_ : std::max(m_.end_ns, in_.end_ns + shift_);
  }

 private:
  StringId intern(StringId id) {
    const std::string& s = in_.str(id);
    auto [it, inserted] = ids_.try_emplace(s, StringId(m_.strings.size()));
    if (inserted) m_.strings.push_back(s);
    return it->second;
  }

  // New ids for the rank's threads, devices, streams and call sites,
  // above the model's own (so each table stays sorted by its key).
  void add_ids() {
    for (const prof::Thread& t : in_.threads) thread(t.id);
    for (const prof::Device& d : in_.devices) device(d.id);
    for (const prof::Stream& s : in_.streams)
      m_.streams.push_back({.device = device(s.device), .stream = s.stream, .name = s.name});
    uint32_t next_callsite = m_.callsites.empty() ? 1 : m_.callsites.back().id + 1;
    for (const prof::CallSite& c : in_.callsites) {
      callsites_[c.id] = next_callsite;
      m_.callsites.push_back(
          {.id = next_callsite++, .file = intern(c.file), .line = c.line, .function = intern(c.function)});
    }
  }

  // The job's id of one of the rank's threads or devices: a new one, named
  // after the rank, the first time (also for one its trace does not
  // describe).
  uint32_t thread(uint32_t id) {
    auto [it, inserted] = threads_.try_emplace(id, m_.threads.empty() ? 0 : m_.threads.back().id + 1);
    if (!inserted) return it->second;
    const prof::Thread* described = in_.thread(id);
    prof::Thread row = described ? *described : prof::Thread{};
    row.id = it->second;
    row.name = fmt::format("rank {} / {}", rank_, row.name.empty() ? "thread " + std::to_string(id) : row.name);
    out_.thread_rank.emplace_back(row.id, position_);
    m_.threads.push_back(std::move(row));
    return it->second;
  }
  uint32_t device(uint32_t id) {
    auto [it, inserted] = devices_.try_emplace(id, uint32_t(out_.device_rank.size()));
    if (!inserted) return it->second;
    const prof::Device* described = in_.device(id);
    prof::Device row = described ? *described : prof::Device{.kind = prof::DeviceKind::other};
    row.id = it->second;
    row.name = fmt::format("rank {} / {}", rank_, row.name.empty() ? "device " + std::to_string(id) : row.name);
    out_.device_rank.push_back(position_);
    m_.devices.push_back(std::move(row));
    return it->second;
  }

  // Each column by its check (trace_tables.h). `name` tells the columns
  // that hold ids or times apart from plain numbers.
  void fix_key_u32(const char* name, uint32_t& v) {
    if (std::strcmp(name, "thread") == 0) v = thread(v);
    else if (std::strcmp(name, "device") == 0) v = device(v);
  }
  void fix_key_string(const char*, StringId& v) { v = intern(v); }
  void fix_u32(const char* name, std::vector<uint32_t>& column) {
    for (uint32_t& v : column) fix_key_u32(name, v);
  }
  void fix_string(const char*, std::vector<StringId>& column) {
    for (StringId& v : column) v = intern(v);
  }
  void fix_callsite(const char*, std::vector<uint32_t>& column) {
    for (uint32_t& v : column) {
      auto it = callsites_.find(v);
      v = it == callsites_.end() ? 0 : it->second;  // 0, or one the trace does not describe: none
    }
  }
  void fix_id64(const char* name, std::vector<uint64_t>& column) const {
    if (std::strcmp(name, "correlation") != 0) return;
    for (uint64_t& v : column) v = v == 0 ? 0 : correlation_base_ + v;
  }
  void fix_integer(const char* name, std::vector<int64_t>& column) const {
    if (std::strcmp(name, "issued") == 0) fix_time(column);  // when a collective was issued
  }
  void fix_time(std::vector<int64_t>& column) const {
    for (int64_t& t : column) t += shift_;
  }
  // Counts, levels, kinds, flags, values and text stay as they are.
  template <typename Column>
  void fix_count(const char*, Column&) {}
  template <typename Column>
  void fix_level(const char*, Column&) {}
  template <typename Column>
  void fix_kind(const char*, Column&) {}
  template <typename Column>
  void fix_flag(const char*, Column&) {}
  template <typename Column>
  void fix_real(const char*, Column&) {}
  template <typename Column>
  void fix_text(const char*, Column&) {}

#define LOUPE_FIX_KEY(name, type, check, init) fix_key_##check(#name, t.name);
#define LOUPE_FIX_SPAN(start, dur) fix_time(t.start);
#define LOUPE_FIX_POINT(time) fix_time(t.time);
#define LOUPE_FIX_COLUMN(name, type, check, init) fix_##check(#name, t.name);
#define LOUPE_FIX_TRACK(Row, Track, table, member)                                          \
  void fix_track(prof::Track& t) {                                                          \
    LOUPE_COLUMNS_##table(LOUPE_FIX_KEY, LOUPE_FIX_SPAN, LOUPE_FIX_POINT, LOUPE_FIX_COLUMN) \
  }
  LOUPE_EVENT_TABLES(LOUPE_FIX_TRACK)
#undef LOUPE_FIX_TRACK
#undef LOUPE_FIX_COLUMN
#undef LOUPE_FIX_POINT
#undef LOUPE_FIX_SPAN
#undef LOUPE_FIX_KEY

  template <typename Track>
  void append_tables(const std::vector<Track>& from, std::vector<Track>& to) {
    for (const Track& t : from) {
      Track copy = t;
      fix_track(copy);
      to.push_back(std::move(copy));
    }
  }

  JobTimeline& out_;
  prof::TraceModel& m_;
  const prof::TraceModel& in_;
  int64_t rank_;
  size_t position_;
  int64_t shift_;
  uint64_t correlation_base_ = 0;
  std::unordered_map<std::string, StringId> ids_;
  std::map<uint32_t, uint32_t> threads_, devices_, callsites_;
};

}  // namespace

JobTimeline job_timeline(const prof::JobReport& report, const std::vector<RankTrace>& expanded) {
  JobTimeline t{.model = job_timeline_model(report)};
  for (size_t i = 0; i < report.ranks.size(); ++i) t.device_rank.push_back(i);
  std::vector<RankTrace> ranks = expanded;
  std::sort(ranks.begin(), ranks.end(), [](const RankTrace& a, const RankTrace& b) { return a.index < b.index; });
  for (const RankTrace& r : ranks) {
    if (r.index >= report.ranks.size() || r.index >= report.clocks.size() || !r.model) continue;
    int64_t shift = r.model->info.origin_wall_ns - report.origin_wall_ns - report.clocks[r.index].offset_ns;
    RankAppender(t, *r.model, report.ranks[r.index], r.index, shift).append();
  }
  return t;
}

void group_tracks_by_rank(const JobTimeline& timeline, TrackList& list) {
  auto rank_of = [&](const Track& t) -> std::pair<size_t, int> {
    if (t.kind == TrackKind::thread) {
      auto it = std::lower_bound(timeline.thread_rank.begin(), timeline.thread_rank.end(),
                                 std::make_pair(t.thread, size_t(0)));
      return {it != timeline.thread_rank.end() && it->first == t.thread ? it->second : SIZE_MAX, 1};
    }
    bool of_a_device = t.kind == TrackKind::stream || t.kind == TrackKind::memory;
    if (!of_a_device || t.device >= timeline.device_rank.size()) return {SIZE_MAX, 2};
    size_t position = timeline.device_rank[t.device];
    return {position, t.device == position ? 0 : 2};  // device i < ranks is rank i's own row
  };
  std::stable_sort(list.tracks.begin(), list.tracks.end(),
                   [&](const Track& a, const Track& b) { return rank_of(a) < rank_of(b); });
}

}  // namespace loupe::view
