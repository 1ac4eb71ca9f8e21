// A job's timeline model: each piece where the report puts it, by hand.
#include "loupe/view/job_timeline.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace loupe::view
