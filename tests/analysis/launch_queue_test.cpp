// Launch queues on a hand-built trace, and against HTA's queue length
// (get_queue_length_time_series) on real fixtures.
#include <gtest/gtest.h>

#include <filesystem>

#include "loupe/prof/analysis.h"
#include "loupe/prof/import.h"
#include "profiler/test_files.h"
#include "trace_builder.h"

using namespace loupe::prof;
using loupe::test::TraceBuilder;

namespace {

// Three launches at 0, 1 and 2 of ops that start at 10, 20 and 30, and an
// op with no launch (not counted): 1, 2, 3 queued, then 2, 1, 0. Over
// [0, 30): 1 * 1 + 2 * 1 + 3 * 8 + 2 * 10 + 1 * 10 = 57, a mean of 57 / 30.
TEST(LaunchQueues, CountLaunchedOpsNotYetStarted) {
  loupe::test::TempDir dir;
  TraceBuilder t(dir.file("t.db"));
  t.device(0);
  for (int64_t k = 0; k < 3; ++k) {
    t.launch(0, k, 1, uint64_t(k + 1));
    t.op(0, 0, 10 * (k + 1), 5, uint64_t(k + 1));
  }
  t.op(0, 0, 40, 5);
  std::vector<LaunchQueue> q = launch_queues(t.load());
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].time, (std::vector<int64_t>{0, 1, 2, 10, 20, 30}));
  EXPECT_EQ(q[0].length, (std::vector<int64_t>{1, 2, 3, 2, 1, 0}));
  EXPECT_EQ(q[0].max_length, 3);
  EXPECT_DOUBLE_EQ(q[0].mean_length, 57.0 / 30.0);
}

// A launch and another op's start at one time: the length after both.
TEST(LaunchQueues, AtOneTimeTheLengthIsTheOneAfterAll) {
  loupe::test::TempDir dir;
  TraceBuilder t(dir.file("t.db"));
  t.device(0);
  t.launch(0, 0, 1, 1);
  t.op(0, 0, 10, 5, 1);
  t.launch(0, 10, 1, 2);
  t.op(0, 0, 20, 5, 2);
  std::vector<LaunchQueue> q = launch_queues(t.load());
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].max_length, 1);
  EXPECT_EQ(q[0].time, (std::vector<int64_t>{0, 10, 20}));
  EXPECT_EQ(q[0].length, (std::vector<int64_t>{1, 1, 0}));
}

// HTA 0.5.0's get_queue_length_time_series on a100_event_sync_multistream,
// its rows reduced to the last of each microsecond (its stream 28 shows 2
// for a launch and a memset start both at 825 us, in that order, then 1).
// HTA's parser keeps only part of v100_train_5steps' kernels (16,216 of
// the 20,270 the JSON holds on stream 7), so that trace is not compared.
TEST(LaunchQueues, AsHtaCountsThemOnAFixture) {
  if (!std::filesystem::is_directory(LOUPE_FIXTURES_DIR)) GTEST_SKIP() << "no fixtures at " << LOUPE_FIXTURES_DIR;
  loupe::test::TempDir dir;
  import_trace(std::string(LOUPE_FIXTURES_DIR) + "/a100_event_sync_multistream.json.gz", dir.file("t.db"));
  std::vector<LaunchQueue> q = launch_queues(load_trace(dir.file("t.db")));
  ASSERT_EQ(q.size(), 3u);
  auto us = [](std::vector<int64_t> t) {
    for (int64_t& v : t) v /= 1000;
    return t;
  };
  EXPECT_EQ(q[0].stream, 20u);
  EXPECT_EQ(us(q[0].time), (std::vector<int64_t>{387, 411, 414, 444}));
  EXPECT_EQ(q[0].length, (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(q[1].stream, 24u);
  EXPECT_EQ(us(q[1].time), (std::vector<int64_t>{19764, 19778, 19779, 19794}));
  EXPECT_EQ(q[1].length, (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(q[2].stream, 28u);
  EXPECT_EQ(us(q[2].time), (std::vector<int64_t>{810, 825, 841}));
  EXPECT_EQ(q[2].length, (std::vector<int64_t>{1, 1, 0}));
  for (const LaunchQueue& s : q) EXPECT_EQ(s.max_length, 1);
}

}  // namespace
