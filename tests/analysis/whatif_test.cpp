// What-if replays on small traces whose replay is worked out by hand in
// each test, and the unchanged replay of the real fixtures against their
// recorded step times.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "loupe/prof/import.h"
#include "loupe/prof/whatif.h"
#include "profiler/test_files.h"
#include "trace_builder.h"

using namespace loupe::prof;
using loupe::test::TraceBuilder;

namespace {

class WhatIfOf : public ::testing::Test {
 protected:
  loupe::test::TempDir dir;
  TraceBuilder trace() {
    TraceBuilder t(dir.file("t.db"));
    t.device(0);
    return t;
  }
};

// Thread 0 launches A [0,5) and B [5,10); A runs [10,110), B [110,310);
// cudaStreamSynchronize [10,320) returns 10 ns after B; the step [0,330)
// ends 10 ns after the wait.
void stream_sync(TraceBuilder& t) {
  t.step(0, 1, 0, 330);
  t.launch(0, 0, 5, 1);
  t.launch(0, 5, 5, 2);
  t.op(0, 0, 10, 100, 1, DeviceOpKind::kernel, "A");
  t.op(0, 0, 110, 200, 2, DeviceOpKind::kernel, "B");
  t.span(0, 10, 310, "cudaStreamSynchronize", SpanKind::wait);
  t.sync(0, 10, 310, SyncKind::stream, 0);
}

TEST_F(WhatIfOf, NoChangeGivesBackTheRecordedTimes) {
  TraceBuilder t = trace();
  stream_sync(t);
  Prediction p = what_if(t.load(), {});
  EXPECT_EQ(p.measured_ns, 330);
  EXPECT_EQ(p.predicted_ns, 330);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].predicted_ns, 330);
  EXPECT_EQ(p.saved_per_step_ns(), 0);
  EXPECT_TRUE(p.missing.empty());
}

// B at half: it runs [110,210), the wait returns 10 ns later at 220, the
// step ends 10 ns after that: 230.
TEST_F(WhatIfOf, AShorterKernelOnThePathShortensTheStep) {
  TraceBuilder t = trace();
  stream_sync(t);
  WhatIf change;
  change.scale_kernels.push_back({"^B$", 0.5});
  Prediction p = what_if(t.load(), change);
  EXPECT_EQ(p.ops_scaled, 1u);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].predicted_ns, 230);
  EXPECT_EQ(p.predicted_ns, 230);
  EXPECT_EQ(p.saved_per_step_ns(), 100);
}

// A at half ends at 60; B, launched at 5, could start at 60 (its recorded
// delay after A, 0); it runs [60,260), the wait returns at 270, the step
// ends at 280. Scaling the stream instead halves both: A [10,60), B
// [60,160), the step 180.
TEST_F(WhatIfOf, WorkMovesUpBehindAShorterKernel) {
  TraceBuilder t = trace();
  stream_sync(t);
  TraceModel m = t.load();
  WhatIf a;
  a.scale_kernels.push_back({"^A$", 0.5});
  EXPECT_EQ(what_if(m, a).steps[0].predicted_ns, 280);
  WhatIf stream;
  stream.scale_streams.push_back({0, 0, 0.5});
  Prediction p = what_if(m, stream);
  EXPECT_EQ(p.ops_scaled, 2u);
  EXPECT_EQ(p.steps[0].predicted_ns, 180);
}

TEST_F(WhatIfOf, ABadRegexIsNamed) {
  TraceBuilder t = trace();
  stream_sync(t);
  WhatIf change;
  change.scale_kernels.push_back({"(", 0.5});
  try {
    what_if(t.load(), change);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'('"), std::string::npos) << e.what();
  }
}

// Two steps of 175 ns, each: launch K [0,5) (K runs [10,110)), a
// synchronous read at train.py:7 [5,125) whose copy runs [110,120) after
// K, then host work to the step's end at 175. Step 2 is the same from 175.
void read_every_step(TraceBuilder& t) {
  uint32_t site = t.callsite("/src/train.py", 7);
  for (int64_t i = 0; i < 2; ++i) {
    int64_t at = 175 * i;
    uint64_t corr = uint64_t(10 * i);
    t.step(0, i + 1, at, 175);
    t.launch(0, at, 5, corr + 1);
    t.op(0, 0, at + 10, 100, corr + 1);
    t.transfer(0, at + 5, 120, CopyKind::device_to_host, true, HostMemory::pageable, site, 4, 0, corr + 2);
    t.copy(0, 0, at + 110, 10, CopyKind::device_to_host, 4, corr + 2);
  }
}

// Made asynchronous, each read's call returns as a launch does (5 ns): the
// host is 115 ns ahead after step 1, so step 2 starts at 60 and launches
// K at 60, which starts 10 ns later as recorded (70) but no earlier than
// the copy before it ends (120): K [120,220), the copy [220,230). Step 2's
// read returns at 65 + 5 = 70 and its host range ends 50 ns later, at 120.
// The host now runs ahead of the device, whose pace sets the steps: step
// 1's window ends when its K does (110), step 2's when its K does (220),
// 110 ns each against 175 recorded. The run ends with the last copy, at 230.
TEST_F(WhatIfOf, AnAsynchronousReadLetsTheHostRunAhead) {
  TraceBuilder t = trace();
  read_every_step(t);
  WhatIf change;
  change.async_copies_at = {"train.py:7"};
  Prediction p = what_if(t.load(), change);
  EXPECT_EQ(p.waits_changed, 2u);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].measured_ns, 175);
  EXPECT_EQ(p.steps[0].predicted_ns, 110);
  EXPECT_EQ(p.steps[1].predicted_ns, 110);
  EXPECT_EQ(p.saved_per_step_ns(), 65);
  EXPECT_EQ(p.measured_ns, 350);
  EXPECT_EQ(p.predicted_ns, 230);
  EXPECT_TRUE(p.unmatched.empty());
}

// Removed, the read takes no time at all: the host's ranges shrink to
// 55 ns, and the device again sets the pace: K [10,110), then K of step 2
// after the copy, [120,220): 110 ns a step. Removing the transfer also
// removes its copy: K of step 2 follows K of step 1 directly, [110,210).
TEST_F(WhatIfOf, ARemovedSyncOrTransferTakesNoTime) {
  TraceBuilder t = trace();
  read_every_step(t);
  TraceModel m = t.load();
  WhatIf sync;
  sync.remove_syncs_at = {"train.py:7"};
  Prediction p = what_if(m, sync);
  EXPECT_EQ(p.steps[0].predicted_ns, 110);
  EXPECT_EQ(p.steps[1].predicted_ns, 110);
  WhatIf transfer;
  transfer.remove_transfers_at = {"train.py"};
  Prediction q = what_if(m, transfer);
  EXPECT_EQ(q.transfers_removed, 2u);
  EXPECT_EQ(q.steps[1].predicted_ns, 100);
  EXPECT_EQ(q.predicted_ns, 210);
}

TEST_F(WhatIfOf, ASiteThatMatchesNothingIsSaid) {
  TraceBuilder t = trace();
  read_every_step(t);
  WhatIf change;
  change.remove_syncs_at = {"train.py:8", "other.py"};
  Prediction p = what_if(t.load(), change);
  EXPECT_EQ(p.waits_changed, 0u);
  EXPECT_EQ(p.unmatched, (std::vector<std::string>{"train.py:8", "other.py"}));
  EXPECT_EQ(p.saved_per_step_ns(), 0);
}

// Steps 0-2 of 1000 ns; a compile [100,400) in step 0 (warm-up) and one
// [2100,2400) in step 2 (a recompile). Dropping recompiles takes 300 ns
// off step 2 alone.
TEST_F(WhatIfOf, DroppedRecompilesLeaveWarmUpAlone) {
  TraceBuilder t = trace();
  t.steps({1000, 1000, 1000}, 500, 100, 0);
  t.compile(0, 100, 300, "step", CompileKind::miss);
  t.compile(0, 2100, 300, "step", CompileKind::miss, "shape changed", "sig2");
  WhatIf change;
  change.drop_recompiles = true;
  Prediction p = what_if(t.load(), change);
  EXPECT_EQ(p.compiles_dropped, 1u);
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[0].predicted_ns, 1000);
  EXPECT_EQ(p.steps[2].predicted_ns, 700);
}

// The host works [0,100), launches [100,110) a kernel that runs
// [120,170), waits for it [110,180) and works on to 300. Without its own
// time the host launches at 0, the kernel runs [20,70), the wait returns
// at 80 and the step ends there: 80 ns.
TEST_F(WhatIfOf, WithoutHostGapsTheDeviceSetsThePace) {
  TraceBuilder t = trace();
  t.step(0, 1, 0, 300);
  t.launch(0, 100, 10, 1);
  t.op(0, 0, 120, 50, 1);
  t.span(0, 110, 70, "cudaDeviceSynchronize", SpanKind::wait);
  t.sync(0, 110, 70, SyncKind::device);
  WhatIf change;
  change.remove_host_gaps = true;
  Prediction p = what_if(t.load(), change);
  EXPECT_EQ(p.host_stretches_removed, 2u);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].predicted_ns, 80);
}

TEST(SiteMatches, FileAndLineAtAPathComponent) {
  EXPECT_TRUE(site_matches("train.py:7", "/src/train.py", 7));
  EXPECT_TRUE(site_matches("src/train.py:7", "/src/train.py", 7));
  EXPECT_TRUE(site_matches("train.py", "/src/train.py", 99));
  EXPECT_TRUE(site_matches("/src/train.py:7", "/src/train.py", 7));
  EXPECT_FALSE(site_matches("train.py:8", "/src/train.py", 7));
  EXPECT_FALSE(site_matches("train.py:7", "/src/my_train.py", 7));
  EXPECT_FALSE(site_matches("", "/src/train.py", 7));
  EXPECT_FALSE(site_matches(":7", "/src/train.py", 7));
  // A colon that is not before a line number is part of the name.
  EXPECT_TRUE(site_matches("c:/x.py", "c:/x.py", 1));
}

// The unchanged replay of every real fixture: each step's replayed time
// against the recorded one (the replay error of docs/analyses.md).
class UnchangedReplay : public ::testing::TestWithParam<const char*> {};

TEST_P(UnchangedReplay, GivesBackEachStepsRecordedTime) {
  if (!std::filesystem::is_directory(LOUPE_FIXTURES_DIR)) GTEST_SKIP() << "no fixtures at " << LOUPE_FIXTURES_DIR;
  loupe::test::TempDir dir;
  import_trace(std::string(LOUPE_FIXTURES_DIR) + "/" + GetParam(), dir.file("t.db"));
  Prediction p = what_if(load_trace(dir.file("t.db")), {});
  for (const StepPrediction& s : p.steps) EXPECT_EQ(s.predicted_ns, s.measured_ns) << "step " << s.number;
  EXPECT_EQ(p.predicted_ns, p.measured_ns);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, UnchangedReplay,
                         ::testing::Values("v100_train_5steps.json.gz", "a100_nccl.json.gz", "sampled_rank0.json.gz",
                                           "a100_alexnet.json.gz", "a100_event_sync.json.gz",
                                           "a100_event_sync_multistream.json.gz", "mi250_minitoy_train.json.gz",
                                           "compare_base.json.gz", "cpu_only.json.gz"));

}  // namespace
