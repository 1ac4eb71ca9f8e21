#include "loupe/prof/model_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <utility>

#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_tables.h"
#include "store/model_checks.h"
#include "store/row_place.h"
#include "store/small_tables.h"

namespace loupe::prof {

namespace {

using store::RowPlace;
using store::TrackKey;

// How a row becomes the next event of its track, generated from
// trace_tables.h: the key columns name the track, every other column is
// appended to the track's array of it.
template <typename Row>
struct RowToTrack;

#define LOUPE_TAKE_KEY(name, type, check, init) t.name = r.name;
#define LOUPE_TAKE_SPAN(start, dur) \
  t.start.push_back(r.start);       \
  t.dur.push_back(r.dur);
#define LOUPE_TAKE_POINT(time) t.time.push_back(r.time);
#define LOUPE_TAKE_COLUMN(name, type, check, init) t.name.push_back(std::move(r.name));
#define LOUPE_ROW_TO_TRACK(Row, Track, tbl, member)                                           \
  template <>                                                                                 \
  struct RowToTrack<Row> {                                                                    \
    using TrackType = Track;                                                                  \
    static void set_key(Track& t, const Row& r) {                                             \
      LOUPE_COLUMNS_##tbl(LOUPE_TAKE_KEY, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_IGNORE)           \
    }                                                                                         \
    static void append(Track& t, Row& r) {                                                    \
      LOUPE_COLUMNS_##tbl(LOUPE_IGNORE, LOUPE_TAKE_SPAN, LOUPE_TAKE_POINT, LOUPE_TAKE_COLUMN) \
    }                                                                                         \
  };
LOUPE_EVENT_TABLES(LOUPE_ROW_TO_TRACK)
#undef LOUPE_ROW_TO_TRACK
#undef LOUPE_TAKE_COLUMN
#undef LOUPE_TAKE_POINT
#undef LOUPE_TAKE_SPAN
#undef LOUPE_TAKE_KEY

// Moves `rows` into tracks in file order, and frees them.
template <typename Row, typename Track>
void build_tracks(std::vector<Row>& rows, std::vector<Track>& tracks) {
  using P = RowPlace<Row>;
  using T = RowToTrack<Row>;
  std::vector<uint32_t> order = store::file_order<Row>(rows.size(), [&](size_t i) -> const Row& { return rows[i]; });
  for (size_t i = 0; i < order.size();) {
    TrackKey key = P::track(rows[order[i]]);
    size_t end = i;
    while (end < order.size() && P::track(rows[order[end]]) == key) ++end;
    Track& t = tracks.emplace_back();
    T::set_key(t, rows[order[i]]);
    std::apply([n = end - i](auto&... col) { (col.reserve(n), ...); }, t.columns());
    for (; i < end; ++i) T::append(t, rows[order[i]]);
  }
  std::vector<Row>().swap(rows);
}

template <typename Map>
auto values_of(const Map& map) {
  std::vector<typename Map::mapped_type> values;
  values.reserve(map.size());
  for (const auto& [key, value] : map) values.push_back(value);
  return values;
}

}  // namespace

struct ModelBuilder::Impl {
  std::string path;
  std::vector<std::string> strings{""};
  std::map<uint32_t, DeviceRow> devices;
  std::map<std::pair<uint32_t, uint32_t>, StreamRow> streams;
  std::map<uint32_t, ThreadRow> threads;
  std::map<uint32_t, CallSiteRow> callsites;
  std::map<std::string, std::string> meta;
#define LOUPE_BUILDER_ROWS(Row, Track, table, member) std::vector<Row> member;
  LOUPE_EVENT_TABLES(LOUPE_BUILDER_ROWS)
#undef LOUPE_BUILDER_ROWS
};

ModelBuilder::ModelBuilder(std::string path, const WriterOptions& options) : impl_(new Impl) {
  impl_->path = std::move(path);
  for (const auto& [key, value] : store::first_meta(options)) set_meta(key, value);
}

ModelBuilder::~ModelBuilder() = default;

void ModelBuilder::set_strings(std::vector<std::string> strings) {
  if (strings.empty()) strings.emplace_back();
  impl_->strings = std::move(strings);
}

void ModelBuilder::put(const DeviceRow& row) { impl_->devices[row.id] = row; }
void ModelBuilder::put(const StreamRow& row) { impl_->streams[{row.device, row.stream}] = row; }
void ModelBuilder::put(const ThreadRow& row) { impl_->threads[row.id] = row; }
void ModelBuilder::put(const CallSiteRow& row) { impl_->callsites[row.id] = row; }
void ModelBuilder::set_meta(std::string_view key, std::string_view value) {
  impl_->meta[std::string(key)] = std::string(value);
}

#define LOUPE_BUILDER_ADD(Row, Track, table, member) \
  void ModelBuilder::add(Row row) { impl_->member.push_back(std::move(row)); }
LOUPE_EVENT_TABLES(LOUPE_BUILDER_ADD)
#undef LOUPE_BUILDER_ADD

TraceModel ModelBuilder::finish() {
  Impl& b = *impl_;
  TraceModel m;
  m.path = b.path;
  try {
    if (!b.strings[0].empty()) throw StoreError("strings: string id 0 is not the empty string");
    m.info = store::trace_info(std::move(b.meta));
    m.strings = std::move(b.strings);
    m.devices = values_of(b.devices);
    m.streams = values_of(b.streams);
    m.threads = values_of(b.threads);
    m.callsites = values_of(b.callsites);
    for (const CallSite& c : m.callsites) {
      if (c.file >= m.strings.size() || c.function >= m.strings.size()) {
        throw StoreError(fmt::format("callsites: call site {} refers to a missing string", c.id));
      }
    }
    store::check_parents(m.callsites);
#define LOUPE_BUILD_TABLE(Row, Track, table, member) build_tracks(b.member, m.member);
    LOUPE_EVENT_TABLES(LOUPE_BUILD_TABLE)
#undef LOUPE_BUILD_TABLE
    store::check_events(m, [](const char*) { return true; });
  } catch (const StoreError& e) {
    throw TraceError(fmt::format("{}: {}", b.path, e.what()));
  } catch (const std::bad_alloc&) {
    throw TraceError(fmt::format("{}: out of memory while building the trace", b.path));
  }
  store::set_extent(m);
  return m;
}

}  // namespace loupe::prof
