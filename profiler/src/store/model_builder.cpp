#include "loupe/prof/model_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <unordered_map>
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

// The order a file's rows are read back in: by track key, then by time,
// then in the order they were written. Rows arrive in time order within a
// track, interleaved across tracks, so they are counted into tracks first
// and each track is sorted only if it is not already.
template <typename Row>
std::vector<uint32_t> file_order(const std::vector<Row>& rows) {
  using P = RowPlace<Row>;
  std::unordered_map<TrackKey, uint32_t, store::TrackKeyHash> dense;
  std::vector<TrackKey> keys;
  std::vector<uint32_t> track_of(rows.size());
  std::vector<size_t> count;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [it, inserted] = dense.try_emplace(P::track(rows[i]), uint32_t(keys.size()));
    if (inserted) {
      keys.push_back(it->first);
      count.push_back(0);
    }
    track_of[i] = it->second;
    ++count[it->second];
  }
  std::vector<uint32_t> by_key(keys.size());
  for (uint32_t k = 0; k < by_key.size(); ++k) by_key[k] = k;
  std::sort(by_key.begin(), by_key.end(), [&](uint32_t x, uint32_t y) { return keys[x] < keys[y]; });
  std::vector<size_t> next(keys.size());
  size_t offset = 0;
  for (uint32_t k : by_key) {
    next[k] = offset;
    offset += count[k];
  }
  std::vector<uint32_t> order(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) order[next[track_of[i]]++] = uint32_t(i);
  auto by_time = [&](uint32_t x, uint32_t y) { return P::start(rows[x]) < P::start(rows[y]); };
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin + count[track_of[order[begin]]];
    auto first = order.begin() + long(begin), last = order.begin() + long(end);
    if (!std::is_sorted(first, last, by_time)) std::stable_sort(first, last, by_time);
    begin = end;
  }
  return order;
}

// Moves `rows` into tracks in file order, and frees them.
template <typename Row, typename Track>
void build_tracks(std::vector<Row>& rows, std::vector<Track>& tracks) {
  using P = RowPlace<Row>;
  using T = RowToTrack<Row>;
  std::vector<uint32_t> order = file_order(rows);
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
