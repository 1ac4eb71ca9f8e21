#include <fmt/format.h>

#include <utility>

#include "loupe/prof/trace_tables.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof {

namespace {

// How a track's i-th event becomes a row again, generated from
// trace_tables.h: the inverse of the model builder's append.
template <typename Track>
struct TrackToRow;

#define LOUPE_GIVE_KEY(name, type, check, init) r.name = t.name;
#define LOUPE_GIVE_SPAN(start, dur) \
  r.start = t.start[i];             \
  r.dur = t.dur[i];
#define LOUPE_GIVE_POINT(time) r.time = t.time[i];
#define LOUPE_GIVE_COLUMN(name, type, check, init) r.name = t.name[i];
#define LOUPE_TRACK_TO_ROW(Row, Track, tbl, member)                                                       \
  template <>                                                                                             \
  struct TrackToRow<Track> {                                                                              \
    static Row row(const Track& t, size_t i) {                                                            \
      Row r;                                                                                              \
      LOUPE_COLUMNS_##tbl(LOUPE_GIVE_KEY, LOUPE_GIVE_SPAN, LOUPE_GIVE_POINT, LOUPE_GIVE_COLUMN) return r; \
    }                                                                                                     \
  };
LOUPE_EVENT_TABLES(LOUPE_TRACK_TO_ROW)
#undef LOUPE_TRACK_TO_ROW
#undef LOUPE_GIVE_COLUMN
#undef LOUPE_GIVE_POINT
#undef LOUPE_GIVE_SPAN
#undef LOUPE_GIVE_KEY

// Rows staged before a commit: the writer's memory stays bounded.
constexpr uint64_t kRowsPerCommit = uint64_t(1) << 18;

template <typename Track>
void write_tracks(const std::vector<Track>& tracks, TraceWriter& w) {
  for (const Track& t : tracks) {
    for (size_t i = 0; i < t.size(); ++i) {
      w.add(TrackToRow<Track>::row(t, i));
      if (w.staged() >= kRowsPerCommit) w.commit();
    }
  }
}

}  // namespace

void write_model(const TraceModel& m, TraceWriter& w) {
  // The writer numbers strings as it first sees them, so unique strings
  // keep their ids and the rows need no renumbering.
  for (size_t id = 1; id < m.strings.size(); ++id) {
    if (w.intern(m.strings[id]) != id) throw StoreError(fmt::format("string {} of the model is not unique", id));
  }
  for (const Device& d : m.devices) w.put(d);
  for (const Stream& s : m.streams) w.put(s);
  for (const Thread& t : m.threads) w.put(t);
  for (const CallSite& c : m.callsites) w.put(c);
#define LOUPE_WRITE_TABLE(Row, Track, table, member) write_tracks(m.member, w);
  LOUPE_EVENT_TABLES(LOUPE_WRITE_TABLE)
#undef LOUPE_WRITE_TABLE
  for (const auto& [key, value] : m.info.meta) w.set_meta(key, value);
  w.close();
}

}  // namespace loupe::prof
