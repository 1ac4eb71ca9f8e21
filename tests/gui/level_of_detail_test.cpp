// The viewer's GL-free core: time <-> pixel mapping, lanes, visible
// ranges, merging of narrow events, per-pixel min/max and hit testing,
// each against answers worked out by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "loupe/view/hit_test.h"
#include "loupe/view/level_of_detail.h"
#include "loupe/view/min_max.h"
#include "loupe/view/time_axis.h"

namespace loupe::view {
namespace {

TEST(TimeAxis, MapsTimeToPixelsAndBack) {
  TimeAxis a{.start_ns = 1000, .ns_per_px = 10, .x0 = 100, .width = 200};
  EXPECT_FLOAT_EQ(a.x(1000), 100);
  EXPECT_FLOAT_EQ(a.x(2000), 200);
  EXPECT_DOUBLE_EQ(a.time(150), 1500);
  EXPECT_DOUBLE_EQ(a.end_ns(), 3000);
}

TEST(TimeAxis, ZoomKeepsTheTimeUnderTheCursor) {
  TimeAxis a{.start_ns = 1000, .ns_per_px = 10, .x0 = 100, .width = 200};
  zoom_at(a, 200, 0.5);  // 2000 ns is under x=200; 5 ns/px; 100 px left of it
  EXPECT_DOUBLE_EQ(a.ns_per_px, 5);
  EXPECT_DOUBLE_EQ(a.start_ns, 1500);
  EXPECT_DOUBLE_EQ(a.time(200), 2000);
  pan(a, 10);  // content moves right by 10 px = 50 ns earlier
  EXPECT_DOUBLE_EQ(a.start_ns, 1450);
  fit(a, 0, 4000);
  EXPECT_DOUBLE_EQ(a.start_ns, 0);
  EXPECT_DOUBLE_EQ(a.ns_per_px, 20);
  zoom_at(a, 100, 1e-9);  // never deeper than kMinNsPerPx
  EXPECT_DOUBLE_EQ(a.ns_per_px, kMinNsPerPx);
}

TEST(TimeAxis, ClampKeepsTheViewNearTheTrace) {
  TimeAxis a{.start_ns = -5000, .ns_per_px = 100, .x0 = 0, .width = 100};  // 10 us wide
  clamp(a, 0, 1000);                                                       // margin 100: at most [-100, 1100], 1200 ns
  EXPECT_DOUBLE_EQ(a.ns_per_px, 12);
  EXPECT_DOUBLE_EQ(a.start_ns, -100);
}

TEST(TimeAxis, RulerTicks) {
  // 10 ns/px, ticks >= 50 px apart: 500 ns (1, 2, 5 x 10^k, the first >= 500).
  EXPECT_DOUBLE_EQ(tick_step(10, 50), 500);
  EXPECT_DOUBLE_EQ(tick_step(10, 41), 500);
  EXPECT_DOUBLE_EQ(tick_step(10, 20), 200);
  EXPECT_EQ(ruler_label(1.05e6, 5e4), "1.05 ms");
  EXPECT_EQ(ruler_label(2e9, 1e9), "2 s");
  EXPECT_EQ(ruler_label(2.5e9, 5e8), "2.5 s");
  EXPECT_EQ(ruler_label(0, 5e4), "0 us");
  TimeAxis a{.start_ns = 0, .ns_per_px = 10, .x0 = 0, .width = 300};  // 0..3000 ns
  std::vector<Tick> t = ruler_ticks(a, 50, 0);
  ASSERT_EQ(t.size(), 7u);  // 0, 500, ..., 3000
  EXPECT_TRUE(t[0].major);
  EXPECT_FALSE(t[1].major);
  EXPECT_TRUE(t[5].major);  // 2500 ns = 5 steps
  EXPECT_FLOAT_EQ(t[5].x, 250);
  EXPECT_EQ(t[5].label, "2.5 us");
  TimeAxis n{.start_ns = -2500, .ns_per_px = 10, .x0 = 0, .width = 300};  // -2500..500 ns
  t = ruler_ticks(n, 50, 0);
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(t[0].label, "-2.5 us");
  EXPECT_EQ(t[5].label, "0.0 us");  // not "-0.0 us"
}

TEST(Lane, PacksSpansByDepthAndOverlap) {
  // Spans at depth 0: [0,10) [20,25); depth 1: [2,5) [6,8).
  std::vector<int64_t> start = {0, 2, 6, 20}, dur = {10, 3, 2, 5};
  std::vector<uint32_t> depth = {0, 1, 1, 0};
  PackedLanes p = pack_lanes(start.data(), dur.data(), 4, depth.data());
  ASSERT_EQ(p.lanes.size(), 2u);
  EXPECT_EQ(p.group, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(p.lanes[0].index, (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(p.lanes[1].index, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p.lanes[1].end_at(1), 8);

  // Overlapping operations: [0,10) [5,15) [12,15): the second needs a lane
  // of its own, the third fits after the first.
  std::vector<int64_t> s2 = {0, 5, 12}, d2 = {10, 10, 3};
  p = pack_lanes(s2.data(), d2.data(), 3, nullptr);
  ASSERT_EQ(p.lanes.size(), 2u);
  EXPECT_EQ(p.lanes[0].index, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(p.lanes[1].index, (std::vector<uint32_t>{1}));
  EXPECT_TRUE(p.lanes[0].ends_sorted);

  // One lane allowed: all three share it, and it says its ends are not sorted.
  p = pack_lanes(s2.data(), d2.data(), 3, nullptr, 1);
  ASSERT_EQ(p.lanes.size(), 1u);
  EXPECT_TRUE(p.lanes[0].identity);
  EXPECT_FALSE(p.lanes[0].ends_sorted);
  EXPECT_EQ(p.lanes[0].max_dur, 10);
  EXPECT_EQ(first_ending_after(p.lanes[0], 11), 1u);  // [5,15) is the first still open at 11
}

TEST(Lane, FirstVisibleByBinarySearch) {
  std::vector<int64_t> start = {0, 10, 30}, dur = {10, 10, 10};
  Lane l = whole_lane(start.data(), dur.data(), 3);
  EXPECT_TRUE(l.identity);
  EXPECT_EQ(first_ending_after(l, 0), 0u);
  EXPECT_EQ(first_ending_after(l, 10), 1u);  // [0,10) ends at 10: not after it
  EXPECT_EQ(first_ending_after(l, 25), 2u);
  EXPECT_EQ(first_ending_after(l, 40), 3u);
  EXPECT_EQ(first_starting_at(l, 0, 11), 2u);
}

TEST(Lane, SearchesThroughSamplesAgreeWithPlainBinarySearch) {
  // 10,000 intervals of 1..7 ns, 0..9 ns apart: many blocks of kSkip.
  std::vector<int64_t> start, dur;
  int64_t t = 0;
  for (int i = 0; i < 10000; ++i) {
    start.push_back(t);
    dur.push_back(1 + i % 7);
    t += dur.back() + i % 10;
  }
  Lane l = whole_lane(start.data(), dur.data(), start.size());
  ASSERT_FALSE(l.end_sample.empty());
  std::vector<int64_t> end(start.size());
  for (size_t i = 0; i < start.size(); ++i) end[i] = start[i] + dur[i];
  for (int64_t q = -5; q < t + 5; q += 37) {
    for (size_t from : {0ul, 1ul, 63ul, 64ul, 65ul, 5000ul, 9999ul, 10000ul}) {
      size_t want_s = size_t(std::lower_bound(start.begin() + long(from), start.end(), q) - start.begin());
      size_t want_e = size_t(std::lower_bound(end.begin() + long(from), end.end(), q) - end.begin());
      ASSERT_EQ(first_starting_at(l, from, q), want_s) << q << " from " << from;
      ASSERT_EQ(first_ending_at_or_after(l, from, q), want_e) << q << " from " << from;
    }
    size_t want = size_t(std::upper_bound(end.begin(), end.end(), q) - end.begin());
    ASSERT_EQ(first_ending_after(l, q), want) << q;
  }
}

TEST(Lane, FirstBreakAgreesWithAScan) {
  // 100,000 intervals with a wide one or a long gap now and then.
  std::vector<int64_t> start, dur;
  int64_t t = 0;
  for (int i = 0; i < 100000; ++i) {
    int64_t gap = (i % 7919 == 0) ? 500 : (i % 3);
    int64_t d = (i % 4999 == 0) ? 300 : 1 + i % 5;
    t += gap;
    start.push_back(t);
    dur.push_back(d);
    t += d;
  }
  Lane l = whole_lane(start.data(), dur.data(), start.size());
  ASSERT_GE(l.break_max.size(), 2u);  // at least two levels above the intervals
  auto scan = [&](size_t from, int64_t thr) {
    for (size_t k = from; k < start.size(); ++k) {
      int64_t b = dur[k];
      if (k > 0) b = std::max(b, start[k] - (start[k - 1] + dur[k - 1]));
      if (b >= thr) return k;
    }
    return start.size();
  };
  for (int64_t thr : {3, 6, 100, 301, 400, 501, 100000}) {
    for (size_t from : {0ul, 1ul, 63ul, 64ul, 4095ul, 4096ul, 4097ul, 50000ul, 99999ul, 100000ul}) {
      ASSERT_EQ(first_break(l, from, thr), scan(from, thr)) << "from " << from << " threshold " << thr;
    }
  }
}

// Axis 0..1000 ns over 100 px: 10 ns a pixel; 3 px = 30 ns.
const TimeAxis kAxis{.start_ns = 0, .ns_per_px = 10, .x0 = 0, .width = 100};

// What is drawn of a lane of all the events (instants when `dur` is null)
// on `axis`, merging runs narrower than 3 px.
std::vector<DrawItem> items_of(const std::vector<int64_t>& start, const int64_t* dur, const TimeAxis& axis = kAxis) {
  std::vector<DrawItem> items;
  lane_items(whole_lane(start.data(), dur, start.size()), axis, 3, items);
  return items;
}

TEST(LevelOfDetail, MergesNarrowRunsKeepsWideAndIsolatedEvents) {
  //            A      B      C        D          E         F         G           H
  std::vector<int64_t> start = {0, 6, 12, 100, 500, 600, 990, 1200};
  std::vector<int64_t> dur = {5, 3, 2, 300, 5, 5, 110, 100};
  std::vector<DrawItem> items = items_of(start, dur.data());
  ASSERT_EQ(items.size(), 5u);
  // A, B, C end within 30 ns of each other: one item of 3, from 0 to 14 ns.
  EXPECT_EQ(items[0].first, 0u);
  EXPECT_EQ(items[0].count, 3u);
  EXPECT_EQ(items[0].start, 0);
  EXPECT_EQ(items[0].end, 14);
  EXPECT_FLOAT_EQ(items[0].x0, 0);
  EXPECT_FLOAT_EQ(items[0].x1, 1.4f);
  // D is 30 px wide: itself.
  EXPECT_EQ(items[1].first, 3u);
  EXPECT_EQ(items[1].count, 1u);
  EXPECT_FLOAT_EQ(items[1].x0, 10);
  EXPECT_FLOAT_EQ(items[1].x1, 40);
  // E and F are narrow but 95 ns (9.5 px) apart: each alone, 1 px wide.
  EXPECT_EQ(items[2].first, 4u);
  EXPECT_EQ(items[2].count, 1u);
  EXPECT_FLOAT_EQ(items[2].x0, 50);
  EXPECT_FLOAT_EQ(items[2].x1, 51);
  EXPECT_EQ(items[3].first, 5u);
  // G starts in view and ends past it; H is out of view.
  EXPECT_EQ(items[4].first, 6u);
  EXPECT_FLOAT_EQ(items[4].x0, 99);
  EXPECT_FLOAT_EQ(items[4].x1, 110);
}

TEST(LevelOfDetail, DenseRunsSplitAtVisibleGaps) {
  // 21 events of 5 ns every 10 ns (0..205), then 10 more from 300 (300..395):
  // the 95 ns gap is wider than 3 px, so two runs.
  std::vector<int64_t> start, dur;
  for (int i = 0; i <= 20; ++i) start.push_back(i * 10), dur.push_back(5);
  for (int i = 0; i < 10; ++i) start.push_back(300 + i * 10), dur.push_back(5);
  std::vector<DrawItem> items = items_of(start, dur.data());
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].count, 21u);
  EXPECT_EQ(items[0].end, 205);
  EXPECT_EQ(items[1].first, 21u);
  EXPECT_EQ(items[1].count, 10u);
  EXPECT_EQ(items[1].start, 300);
  EXPECT_EQ(items[1].end, 395);
}

TEST(LevelOfDetail, VisibleRangeStartsWithTheEventOpenAtTheLeftEdge) {
  std::vector<int64_t> start = {0, 100, 500}, dur = {50, 300, 10};
  TimeAxis a{.start_ns = 200, .ns_per_px = 10, .x0 = 0, .width = 20};  // 200..400
  std::vector<DrawItem> items = items_of(start, dur.data(), a);
  ASSERT_EQ(items.size(), 1u);  // only [100,400)
  EXPECT_EQ(items[0].first, 1u);
  EXPECT_FLOAT_EQ(items[0].x0, -10);
  EXPECT_FLOAT_EQ(items[0].x1, 20);
}

TEST(LevelOfDetail, ManyEventsCostPixelsNotEvents) {
  // A million 1 ns events every 2 ns across 2 ms on 1000 px: one run.
  std::vector<int64_t> start(1'000'000), dur(1'000'000, 1);
  for (size_t i = 0; i < start.size(); ++i) start[i] = int64_t(i) * 2;
  TimeAxis a{.start_ns = 0, .ns_per_px = 2000, .x0 = 0, .width = 1000};
  std::vector<DrawItem> items = items_of(start, dur.data(), a);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].count, 1'000'000u);
}

TEST(LevelOfDetail, Instants) {
  std::vector<int64_t> time = {0, 1, 2, 500};
  std::vector<DrawItem> items = items_of(time, nullptr);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].count, 3u);
  EXPECT_EQ(items[1].first, 3u);
  EXPECT_FLOAT_EQ(items[1].x0, 50);
}

TEST(MinMax, RangeQueriesMatchBruteForce) {
  std::vector<int64_t> v(5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t((i * 7919) % 1013) - 500;
  RangeMinMax r(v.data(), v.size());
  for (size_t i : {0ul, 1ul, 15ul, 16ul, 17ul, 255ul, 256ul, 1000ul}) {
    for (size_t j : {i, i + 1, i + 31, i + 257, i + 3000, v.size()}) {
      if (j > v.size()) continue;
      MinMax want;
      for (size_t k = i; k < j; ++k) want.add(double(v[k]));
      MinMax got = r.query(i, j);
      ASSERT_EQ(got.empty, want.empty) << i << ".." << j;
      if (!want.empty) {
        EXPECT_EQ(got.min, want.min) << i << ".." << j;
        EXPECT_EQ(got.max, want.max) << i << ".." << j;
      }
    }
  }
  std::vector<int64_t> seq(1000);
  for (size_t i = 0; i < seq.size(); ++i) seq[i] = int64_t(i);
  RangeMinMax s(seq.data(), seq.size());
  EXPECT_EQ(s.query(17, 900).min, 17);
  EXPECT_EQ(s.query(17, 900).max, 899);
}

TEST(MinMax, IgnoresValuesThatAreNotNumbers) {
  std::vector<double> v = {1, std::nan(""), 3, INFINITY, -2};
  RangeMinMax r(v.data(), v.size());
  MinMax m = r.query(0, v.size());
  EXPECT_EQ(m.min, -2);
  EXPECT_EQ(m.max, 3);
  EXPECT_TRUE(r.query(1, 2).empty);
}

TEST(MinMax, PixelColumnsOfAStepFunction) {
  // Samples (time: value) 0:1 10:5 20:3 25:7 40:2; 10 ns a column; the last
  // value holds until 50.
  std::vector<int64_t> time = {0, 10, 20, 25, 40}, value = {1, 5, 3, 7, 2};
  RangeMinMax r(value.data(), value.size());
  TimeAxis a{.start_ns = 0, .ns_per_px = 10, .x0 = 0, .width = 7};
  std::vector<MinMax> c = pixel_columns(a, time.data(), r, 50);
  ASSERT_EQ(c.size(), 7u);
  auto is = [](const MinMax& m, double lo, double hi) { return !m.empty && m.min == lo && m.max == hi; };
  EXPECT_TRUE(is(c[0], 1, 1));  // [0,10): 1
  EXPECT_TRUE(is(c[1], 5, 5));  // [10,20): 5 from 10 on
  EXPECT_TRUE(is(c[2], 3, 7));  // [20,30): 3 then 7
  EXPECT_TRUE(is(c[3], 7, 7));  // [30,40): 7 holds
  EXPECT_TRUE(is(c[4], 2, 2));  // [40,50): 2
  EXPECT_TRUE(is(c[5], 2, 2));  // [50,60): holds until 50
  EXPECT_TRUE(c[6].empty);      // [60,70): past the end

  // A column in the middle of a long flat stretch holds the value before it;
  // a column before the first sample is empty.
  TimeAxis b{.start_ns = -10, .ns_per_px = 4, .x0 = 0, .width = 10};  // -10..30
  c = pixel_columns(b, time.data(), r, 50);
  EXPECT_TRUE(c[0].empty);      // [-10,-6)
  EXPECT_TRUE(is(c[2], 1, 1));  // [-2,2): sample 0 inside
  EXPECT_TRUE(is(c[4], 1, 1));  // [6,10)
  EXPECT_TRUE(is(c[8], 3, 7));  // [22,26): 3 holds, 7 from 25
}

TEST(HitTest, FindsTheItemUnderTheMouse) {
  std::vector<DrawItem> items = {{0, 1.4f, 0, 3}, {10, 40, 3, 1}, {50, 51, 4, 1}, {60, 61, 5, 1}};
  EXPECT_EQ(hit_item(items, 25, 2), 1);
  EXPECT_EQ(hit_item(items, 10, 2), 1);
  EXPECT_EQ(hit_item(items, 52, 2), 2);   // narrow: within 2 px
  EXPECT_EQ(hit_item(items, 45, 2), -1);  // between, too far from both
  EXPECT_EQ(hit_item(items, 55.5f, 2), -1);
  EXPECT_EQ(hit_item(items, 8.5f, 2), -1);  // 1.5 px left of a wide item: not it
  EXPECT_EQ(hit_item(items, 0.5f, 2), 0);
  EXPECT_EQ(hit_item({}, 0, 2), -1);
}

}  // namespace
}  // namespace loupe::view
