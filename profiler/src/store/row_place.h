// Where each event table's row goes, generated from trace_tables.h: the
// track it belongs to (its key columns) and the times that place it in the
// track. The writer sorts and summarises what it writes by them, and the
// model builder groups rows into tracks by them, so a file and a model made
// from the same rows order them the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <unordered_map>
#include <vector>

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

// The order rows are read back from a file in: by track key, then by time,
// ties in the order the rows came (`row(i)` is the i-th, i < n). Rows
// arrive in time order within a track, interleaved across a few tracks,
// so a counting sort by track leaves each track sorted, and the per-track
// sort is only a check.
template <typename Row, typename RowAt>
std::vector<uint32_t> file_order(size_t n, RowAt row) {
  using P = RowPlace<Row>;
  std::unordered_map<TrackKey, uint32_t, TrackKeyHash> dense;
  std::vector<TrackKey> keys;
  std::vector<uint32_t> track_of(n);
  std::vector<size_t> count;
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = dense.try_emplace(P::track(row(i)), uint32_t(keys.size()));
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
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[next[track_of[i]]++] = uint32_t(i);
  auto by_time = [&](uint32_t x, uint32_t y) { return P::start(row(x)) < P::start(row(y)); };
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + count[track_of[order[begin]]];
    auto first = order.begin() + long(begin), last = order.begin() + long(end);
    if (!std::is_sorted(first, last, by_time)) std::stable_sort(first, last, by_time);
    begin = end;
  }
  return order;
}

}  // namespace loupe::prof::store
