// Where each event table's row goes, generated from trace_tables.h: the
// track it belongs to (its key columns) and the times that place it in the
// track. The writer sorts and summarises what it writes by them, and the
// model builder groups rows into tracks by them, so a file and a model made
// from the same rows order them the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>

#include "loupe/prof/trace_rows.h"
#include "loupe/prof/trace_tables.h"

namespace loupe::prof::store {

// A track's key: its one or two key columns (b is 0 for one), compared as
// SQL compares the integers the file holds.
struct TrackKey {
  int64_t a = 0, b = 0;
  auto operator<=>(const TrackKey&) const = default;
};

struct TrackKeyHash {
  size_t operator()(const TrackKey& k) const {
    return std::hash<uint64_t>{}(uint64_t(k.a) * 0x9e3779b97f4a7c15ull + uint64_t(k.b));
  }
};

inline TrackKey key_of(std::initializer_list<int64_t> key) {
  return {*key.begin(), key.size() > 1 ? *(key.begin() + 1) : 0};
}

template <typename Row>
struct RowPlace;

#define LOUPE_PLACE_KEY(name, type, check, init) int64_t(r.name),
#define LOUPE_PLACE_START_SPAN(start, dur) return r.start;
#define LOUPE_PLACE_START_POINT(time) return r.time;
#define LOUPE_PLACE_END_SPAN(start, dur) return r.start + r.dur;
#define LOUPE_PLACE_END_POINT(time) return r.time;
#define LOUPE_ROW_PLACE(Row, Track, tbl, member)                                                       \
  template <>                                                                                          \
  struct RowPlace<Row> {                                                                               \
    static constexpr const char* table = #tbl;                                                         \
    static TrackKey track(const Row& r) {                                                              \
      return key_of({LOUPE_COLUMNS_##tbl(LOUPE_PLACE_KEY, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_IGNORE)}); \
    }                                                                                                  \
    static int64_t start(const Row& r) {                                                               \
      LOUPE_COLUMNS_##tbl(LOUPE_IGNORE, LOUPE_PLACE_START_SPAN, LOUPE_PLACE_START_POINT, LOUPE_IGNORE) \
    }                                                                                                  \
    static int64_t end(const Row& r) {                                                                 \
      LOUPE_COLUMNS_##tbl(LOUPE_IGNORE, LOUPE_PLACE_END_SPAN, LOUPE_PLACE_END_POINT, LOUPE_IGNORE)     \
    }                                                                                                  \
  };
LOUPE_EVENT_TABLES(LOUPE_ROW_PLACE)
#undef LOUPE_ROW_PLACE
#undef LOUPE_PLACE_END_POINT
#undef LOUPE_PLACE_END_SPAN
#undef LOUPE_PLACE_START_POINT
#undef LOUPE_PLACE_START_SPAN
#undef LOUPE_PLACE_KEY

}  // namespace loupe::prof::store
