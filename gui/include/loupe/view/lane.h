// A lane: one row of intervals drawn side by side, sorted by start. Host
// spans of one depth on one thread, the operations of one device stream,
// launches of one thread... A lane refers to its track's start and
// duration columns (which it does not own) and, where it holds only some
// of the track's events, to their indices.
//
// Intervals of a lane do not overlap, so their ends are sorted too and the
// first visible one is found by binary search on the end. pack_lanes()
// builds such lanes from any sorted column pair; a lane that had to take
// overlapping events (more overlap than max_lanes allows) says so in
// ends_sorted and is searched through its longest duration instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loupe::view {

struct Lane {
  const int64_t* start = nullptr;  // the track's columns, sorted by start
  const int64_t* dur = nullptr;    // nullptr: instants (duration 0)
  std::vector<uint32_t> index;     // event indices in this lane, by start
  bool identity = false;           // the lane holds events 0..count-1 itself (no index)
  size_t count = 0;
  bool ends_sorted = true;
  int64_t max_dur = 0;
  // The start and end of every kSkip-th interval, contiguous: searches run
  // over these (a few hundred KiB at most, in cache) before finishing among
  // kSkip intervals, so a search costs a handful of cache misses, not one
  // per probe. Built by index_lane().
  static constexpr size_t kSkip = 64;
  std::vector<int64_t> start_sample, end_sample;
  // For merging: an interval's "break" is the larger of its duration and
  // the gap before it; a run of narrow intervals ends at the first break
  // of at least a few pixels. break_max[0][b] is the largest break among
  // positions [b * kSkip, (b + 1) * kSkip), break_max[L + 1] the largest of
  // kSkip entries of break_max[L]: finding the end of a run costs
  // O(kSkip * levels), however many intervals it covers.
  std::vector<std::vector<int64_t>> break_max;

  // The break of position k (its duration alone for the first).
  int64_t break_at(size_t k) const {
    int64_t d = end_at(k) - start_at(k);
    if (k == 0) return d;
    int64_t gap = start_at(k) - end_at(k - 1);
    return gap > d ? gap : d;
  }

  size_t size() const { return count; }
  // The track's event index of the lane's k-th interval.
  size_t event(size_t k) const { return identity ? k : index[k]; }
  int64_t start_at(size_t k) const { return start[event(k)]; }
  int64_t end_at(size_t k) const {
    size_t e = event(k);
    return dur ? start[e] + dur[e] : start[e];
  }
};

// A lane of all `count` events of a column pair, in order.
Lane whole_lane(const int64_t* start, const int64_t* dur, size_t count);
// Builds the lane's search samples (after its events are set).
void index_lane(Lane& lane);

// The lane-position of the first interval that ends after t (or, for an
// instant, is at or after t): where the visible range starts.
size_t first_ending_after(const Lane& lane, int64_t t);
// The lane-position of the first interval starting at or after t, at or
// after position `from`.
size_t first_starting_at(const Lane& lane, size_t from, int64_t t);
// The first position at or after `from` whose break is at least
// `threshold` (size() when none): where a run that includes `from - 1`
// stops.
size_t first_break(const Lane& lane, size_t from, int64_t threshold);
// The lane-position of the first interval ending at or after t, at or after
// `from`. In a lane whose ends are not sorted the start stands in for the
// end (an approximation only such lanes pay for).
size_t first_ending_at_or_after(const Lane& lane, size_t from, int64_t t);

// Splits a sorted track into lanes of non-overlapping intervals, each
// event into the first lane where it fits (interval partitioning). `group`
// (may be null) keeps events of different groups in different lanes (the
// depth of a host span): lanes come out ordered by group, then by creation.
// After max_lanes lanes per group, the rest of the group share its last
// lane, which is then marked ends_sorted = false.
struct PackedLanes {
  std::vector<Lane> lanes;
  std::vector<uint32_t> group;  // per lane
};
PackedLanes pack_lanes(const int64_t* start, const int64_t* dur, size_t count, const uint32_t* group,
                       size_t max_lanes = 8);

}  // namespace loupe::view
