// Kineto's cuda_sync records become rows of `syncs`, joined to their API
// calls: the counts below were taken from the raw JSON (each record joined
// to the cuda_runtime event of its correlation, in Python), before the
// importer kept them. cudaEventQuery has a record too ("Event Sync") but
// only polls: it is neither a sync row nor a wait.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "import/import_test_util.h"
#include "profiler/test_files.h"

using namespace loupe::prof;

namespace {

struct Expected {
  const char* file;
  std::map<SyncKind, uint64_t> rows;
  uint64_t wait_spans;  // host spans of kind wait
};

std::vector<SyncRow> all_syncs(const TraceModel& m) {
  std::vector<SyncRow> out;
  for (const Syncs& t : m.syncs) {
    for (size_t i = 0; i < t.size(); ++i) {
      out.push_back({.thread = t.thread,
                     .start = t.start[i],
                     .dur = t.dur[i],
                     .kind = t.kind[i],
                     .device = t.device[i],
                     .stream = t.stream[i],
                     .event_stream = t.event_stream[i],
                     .recorded_at = t.recorded_at[i]});
    }
  }
  return out;
}

TraceModel import_fixture(const char* name, loupe::test::TempDir& dir) {
  return loupe::test::import_and_load(std::string(LOUPE_FIXTURES_DIR) + "/" + name, dir.file("t.db"));
}

class KinetoSyncs : public ::testing::TestWithParam<Expected> {};

TEST_P(KinetoSyncs, EveryBlockingCallAndStreamWaitIsARow) {
  if (!std::filesystem::is_directory(LOUPE_FIXTURES_DIR)) GTEST_SKIP() << "no fixtures at " << LOUPE_FIXTURES_DIR;
  loupe::test::TempDir dir;
  TraceModel m = import_fixture(GetParam().file, dir);
  std::map<SyncKind, uint64_t> rows;
  for (const SyncRow& s : all_syncs(m)) {
    ++rows[s.kind];
    EXPECT_EQ(s.device, 0u);
    if (s.kind == SyncKind::event || s.kind == SyncKind::stream_wait) {
      EXPECT_NE(s.event_stream, kUnknownStream);
      EXPECT_TRUE(is_trace_time(s.recorded_at));
      EXPECT_LT(s.recorded_at, s.start);  // recorded before it is awaited
    }
    if (s.kind == SyncKind::device) {
      EXPECT_EQ(s.stream, kUnknownStream);
    }
  }
  EXPECT_EQ(rows, GetParam().rows);
  uint64_t waits = 0;
  for (const auto& s : loupe::test::all_spans(m)) waits += s.kind == SpanKind::wait;
  EXPECT_EQ(waits, GetParam().wait_spans);
}

void PrintTo(const Expected& e, std::ostream* os) { *os << e.file; }

INSTANTIATE_TEST_SUITE_P(
    Fixtures, KinetoSyncs,
    ::testing::Values(
        Expected{"a100_event_sync.json.gz", {{SyncKind::stream, 1}, {SyncKind::event, 1}, {SyncKind::device, 1}}, 3},
        Expected{"a100_event_sync_multistream.json.gz", {{SyncKind::stream_wait, 1}, {SyncKind::device, 1}}, 1},
        Expected{
            "a100_alexnet.json.gz", {{SyncKind::stream, 16}, {SyncKind::device, 5}, {SyncKind::stream_wait, 20}}, 21},
        // No cuda_sync records (an older Kineto); its one cudaDeviceSynchronize is still a wait.
        Expected{"v100_train_5steps.json.gz", {}, 1}));

// The one cross-stream wait of the multistream trace, as its raw records
// give it: cudaStreamWaitEvent at 1712867402367682 us makes stream 24 wait
// for the event that cudaEventRecord (correlation 1385, at ...367666 us)
// recorded on stream 20.
TEST(KinetoSyncs, AStreamWaitNamesBothStreamsAndTheRecordingCall) {
  if (!std::filesystem::is_directory(LOUPE_FIXTURES_DIR)) GTEST_SKIP() << "no fixtures at " << LOUPE_FIXTURES_DIR;
  loupe::test::TempDir dir;
  TraceModel m = import_fixture("a100_event_sync_multistream.json.gz", dir);
  std::vector<SyncRow> waits;
  for (const SyncRow& s : all_syncs(m)) {
    if (s.kind == SyncKind::stream_wait) waits.push_back(s);
  }
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].stream, 24u);
  EXPECT_EQ(waits[0].event_stream, 20u);
  EXPECT_EQ(waits[0].dur, 3000);
  EXPECT_EQ(waits[0].start - waits[0].recorded_at, 16000);
  bool record_call = false;
  for (const auto& s : loupe::test::all_spans(m)) {
    record_call |= s.name == "cudaEventRecord" && s.start == waits[0].recorded_at;
  }
  EXPECT_TRUE(record_call) << "no cudaEventRecord call starts at recorded_at";
}

}  // namespace
