// A job's timeline model: each piece where the report puts it, by hand.
#include "loupe/view/job_timeline.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "loupe/view/flows.h"

namespace loupe::view {
namespace {

using namespace loupe::prof;

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

}  // namespace
}  // namespace loupe::view
