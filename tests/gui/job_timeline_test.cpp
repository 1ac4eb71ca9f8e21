// A job's timeline model: each piece where the report puts it, by hand.
#include "loupe/view/job_timeline.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "loupe/view/flows.h"
#include "model_rows.h"

namespace loupe::view {
namespace {

using namespace loupe::prof;
using test::add_row;

// Two ranks and one all-reduce: rank 0 arrives at 100 ns, rank 1 at 300 ns;
// both end near 500 ns. Rank 0 waits for rank 1 from 100 to 300 ns.
JobReport two_rank_report() {
  JobReport r;
  r.dir = "job";
  r.ranks = {0, 7};
  JobCollective c;
  c.group = "0";
  c.name = "allreduce";
  c.bytes = 2048;
  c.last_rank = 7;
  c.last_arrival = 300;
  c.parts = {{0, 100, 500}, {7, 300, 501}};
  r.timeline.push_back(c);
  return r;
}

TEST(JobTimeline, WaitsAndTransfersSitWhereTheRanksWere) {
  TraceModel m = job_timeline_model(two_rank_report());
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[1].name, "rank 7");
  ASSERT_EQ(m.device_ops.size(), 2u);
  const DeviceOps& first = m.device_ops[0];
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first.start[0], 100);
  EXPECT_EQ(first.dur[0], 200);
  EXPECT_EQ(first.kind[0], DeviceOpKind::sync);
  EXPECT_EQ(m.str(first.name[0]), "waiting for rank 7");
  EXPECT_EQ(first.start[1], 300);
  EXPECT_EQ(first.dur[1], 200);
  EXPECT_EQ(first.kind[1], DeviceOpKind::kernel);
  EXPECT_EQ(m.str(first.name[1]), "allreduce 2.0 KiB (group 0)");
  const DeviceOps& last = m.device_ops[1];
  ASSERT_EQ(last.size(), 1u);  // the last rank waits for no one
  EXPECT_EQ(last.start[0], 300);
  EXPECT_EQ(last.dur[0], 201);
  EXPECT_EQ(last.correlation[0], first.correlation[0]);  // one collective, linked across ranks
  EXPECT_EQ(first.correlation[1], first.correlation[0]);
  EXPECT_EQ(m.start_ns, 100);
  EXPECT_EQ(m.end_ns, 501);
}

// Hovering a piece links the collective's other pieces on every rank, and
// no piece of another collective.
TEST(JobTimeline, ACollectiveIsLinkedAcrossRanks) {
  JobReport r = two_rank_report();
  JobCollective next = r.timeline[0];
  next.last_rank = 0;
  next.last_arrival = 900;
  next.parts = {{0, 900, 1000}, {7, 600, 1001}};
  r.timeline.push_back(next);
  TraceModel m = job_timeline_model(r);
  // Rank 7's transfer of the first collective (table 1, index 0) is linked
  // to rank 0's wait and transfer of it, at indices 0 and 1 of table 0.
  std::vector<EventRef> linked = same_collective(m, 1, 0);
  std::sort(linked.begin(), linked.end(), [](const EventRef& a, const EventRef& b) {
    return std::make_pair(a.table, a.index) < std::make_pair(b.table, b.index);
  });
  ASSERT_EQ(linked.size(), 2u);
  EXPECT_EQ(linked[0].table, 0u);
  EXPECT_EQ(linked[0].index, 0u);
  EXPECT_EQ(linked[1].table, 0u);
  EXPECT_EQ(linked[1].index, 1u);
  // The second collective: rank 7 waited from 600 to 900 ns for rank 0.
  const DeviceOps& last = m.device_ops[1];
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(m.str(last.name[1]), "waiting for rank 0");
  EXPECT_EQ(same_collective(m, 1, 1).size(), 2u);  // rank 7's own transfer, and rank 0's
}

// Rank 7's own trace, by hand: its clock is 1,000 ns ahead of rank 0's
// and its origin 200 ns after, so its trace times move by 200 - 1,000 =
// -800 ns onto the job's timeline. A thread "main" with one span at 50 ns
// and a launch at 40 ns of a kernel that ran at 100 ns on stream 7 of its
// device 0, both with correlation id 9.
TraceModel rank_seven_trace() {
  TraceModel m;
  m.info.origin_wall_ns = 5'200;
  m.strings = {"", "step", "gemm", "cudaLaunchKernel"};
  m.threads.push_back({.id = 3, .name = "main"});
  m.devices.push_back({.id = 0, .name = "cuda:0", .kind = DeviceKind::cuda});
  m.streams.push_back({.device = 0, .stream = 7, .name = "stream 7"});
  add_row(m, HostSpanRow{.thread = 3, .start = 50, .dur = 100, .name = 1, .kind = SpanKind::user});
  add_row(m, LaunchRow{.thread = 3, .start = 40, .dur = 5, .name = 3, .device = 0, .stream = 7, .correlation = 9});
  add_row(m, DeviceOpRow{.device = 0,
                         .stream = 7,
                         .start = 100,
                         .dur = 200,
                         .kind = DeviceOpKind::kernel,
                         .name = 2,
                         .correlation = 9});
  m.start_ns = 40;
  m.end_ns = 300;
  return m;
}

TEST(JobTimeline, AnExpandedRanksOwnTracksSitUnderItsRowOnTheJobsClock) {
  JobReport r = two_rank_report();
  r.origin_wall_ns = 5'000;
  r.clocks = {{.rank = 0, .aligned = true}, {.rank = 7, .aligned = true, .offset_ns = 1'000}};
  TraceModel seven = rank_seven_trace();
  JobTimeline t = job_timeline(r, {{1, &seven}});
  const TraceModel& m = t.model;

  ASSERT_EQ(m.devices.size(), 3u);
  EXPECT_EQ(m.devices[2].name, "rank 7 / cuda:0");
  EXPECT_EQ(t.device_rank, (std::vector<size_t>{0, 1, 1}));
  ASSERT_EQ(m.threads.size(), 1u);
  EXPECT_EQ(m.threads[0].name, "rank 7 / main");
  EXPECT_EQ(t.thread_rank, (std::vector<std::pair<uint32_t, size_t>>{{m.threads[0].id, 1}}));

  ASSERT_EQ(m.device_ops.size(), 3u);  // two rank rows, then rank 7's stream
  const DeviceOps& kernel = m.device_ops[2];
  EXPECT_EQ(kernel.device, 2u);
  EXPECT_EQ(kernel.stream, 7u);
  EXPECT_EQ(kernel.start[0], 100 - 800);
  EXPECT_EQ(m.str(kernel.name[0]), "gemm");
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].start[0], 40 - 800);
  EXPECT_EQ(m.launches[0].device[0], 2u);
  EXPECT_EQ(m.launches[0].correlation[0], kernel.correlation[0]);    // still linked
  EXPECT_NE(kernel.correlation[0], m.device_ops[0].correlation[0]);  // and apart from the collectives'
  ASSERT_EQ(m.host_spans.size(), 1u);
  EXPECT_EQ(m.host_spans[0].start[0], 50 - 800);
  EXPECT_EQ(m.str(m.host_spans[0].name[0]), "step");
  EXPECT_EQ(m.start_ns, 40 - 800);
  EXPECT_EQ(m.end_ns, 501);

  TrackList list = build_track_list(m);
  group_tracks_by_rank(t, list);
  ASSERT_EQ(list.tracks.size(), 5u);
  EXPECT_EQ(list.tracks[0].kind, TrackKind::stream);
  EXPECT_EQ(list.tracks[0].device, 0u);                // rank 0's row
  EXPECT_EQ(list.tracks[1].device, 1u);                // rank 7's row
  EXPECT_EQ(list.tracks[2].kind, TrackKind::thread);   // then its thread
  EXPECT_EQ(list.tracks[3].device, 2u);                // and its device
  EXPECT_EQ(list.tracks[4].kind, TrackKind::counter);  // with its launch queue
  EXPECT_EQ(list.tracks[4].device, 2u);
  EXPECT_EQ(list.tracks[4].stream, 7u);
}

}  // namespace
}  // namespace loupe::view
