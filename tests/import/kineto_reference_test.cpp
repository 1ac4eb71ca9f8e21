// Every real Kineto fixture, imported and checked against figures counted
// independently from its raw JSON by tests/import/reference_counts.py
// (Python's own JSON parser and exact Decimal arithmetic, no code shared
// with the importer) and written down here. Busy time is checked to the
// nanosecond, and also recomputed in the test from the raw JSON by a
// second reader (raw_json_reference.h: nlohmann's SAX parser, numbers as
// text).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "import/import_test_util.h"
#include "import/raw_json_reference.h"
#include "loupe/prof/analysis.h"
#include "profiler/test_files.h"

using namespace loupe::prof;

namespace {

struct Reference {
  const char* file;
  uint64_t kernels, memcpys, memsets;
  int64_t htod, dtoh, dtod, ptop;  // memcpy bytes per direction
  uint64_t steps, launches, transfers, memory_events;
  std::vector<std::pair<uint32_t, int64_t>> busy_ns;     // per device: union of its device ops
  std::vector<std::pair<uint32_t, int64_t>> peak_bytes;  // per device: max Total Allocated
};

// Output of tests/import/reference_counts.py, one line per fixture.
const std::vector<Reference>& references() {
  static const std::vector<Reference> refs = {
      {"a100_alexnet.json.gz", 79, 16, 3, 244403360, 0, 0, 0, 0, 98, 16, 0, {{0, 66151429}}, {}},
      {"a100_event_sync.json.gz", 4, 1, 0, 0, 1, 0, 0, 1, 5, 1, 0, {{0, 51048}}, {}},
      {"a100_event_sync_multistream.json.gz", 3, 0, 3, 0, 0, 0, 0, 0, 6, 0, 0, {{0, 372680}}, {}},
      {"a100_nccl.json.gz", 2700, 960, 114, 0, 0, 307323096, 0, 3, 3774, 960, 0, {{0, 157500014}}, {}},
      {"compare_base.json.gz", 6, 6, 6, 7790604, 0, 1802240, 0, 2, 2, 0, 0, {{1, 1697690}}, {}},
      {"compare_test.json.gz", 5, 6, 6, 7790604, 0, 1802240, 0, 2, 2, 0, 0, {{1, 1693690}}, {}},
      {"cpu_only.json.gz", 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, {}, {}},
      {"mi250_minitoy_train.json.gz", 14, 2, 0, 5120, 0, 0, 0, 2, 16, 2, 0, {{2, 149042}}, {}},
      {"sampled_rank0.json.gz", 1154, 40, 10, 4866112, 6115, 209194904, 0, 2, 1204, 40, 0, {{0, 547669941}}, {}},
      {"v100_train_5steps.json.gz",
       19370,
       2040,
       880,
       0,
       0,
       5892787600,
       0,
       5,
       22290,
       2040,
       28010,
       {{1, 1002113087}},
       {{1, 6629508096}, {2, 8}}},
  };
  return refs;
}

// Test names and failure messages show the file, not the struct's bytes.
void PrintTo(const Reference& ref, std::ostream* os) { *os << ref.file; }

std::string fixture(const char* name) { return std::string(LOUPE_FIXTURES_DIR) + "/" + name; }

class KinetoReference : public ::testing::TestWithParam<Reference> {};

TEST_P(KinetoReference, ImportAgreesWithIndependentCounts) {
  const Reference& ref = GetParam();
  if (!std::filesystem::is_directory(LOUPE_FIXTURES_DIR)) {
    GTEST_SKIP() << "the Kineto fixtures folder is absent: " << LOUPE_FIXTURES_DIR;
  }
  loupe::test::TempDir dir;
  ImportResult result;
  TraceModel m = loupe::test::import_and_load(fixture(ref.file), dir.file("t.db"), ImportFormat::auto_detect, &result);
  EXPECT_EQ(result.format, ImportFormat::kineto);
  EXPECT_EQ(m.info.status, "imported");

  std::map<DeviceOpKind, uint64_t> kinds;
  std::map<CopyKind, int64_t> bytes;
  std::map<uint64_t, std::pair<CopyKind, int64_t>> copies;  // correlation -> (direction, bytes)
  std::set<uint64_t> op_correlations;
  for (const DeviceOps& t : m.device_ops) {
    for (size_t i = 0; i < t.size(); ++i) {
      ++kinds[t.kind[i]];
      if (t.kind[i] == DeviceOpKind::memcpy) {
        bytes[t.copy_kind[i]] += t.bytes[i];
        copies[t.correlation[i]] = {t.copy_kind[i], t.bytes[i]};
      }
      op_correlations.insert(t.correlation[i]);
    }
  }
  EXPECT_EQ(kinds[DeviceOpKind::kernel], ref.kernels);
  EXPECT_EQ(kinds[DeviceOpKind::memcpy], ref.memcpys);
  EXPECT_EQ(kinds[DeviceOpKind::memset], ref.memsets);
  EXPECT_EQ(bytes[CopyKind::host_to_device], ref.htod);
  EXPECT_EQ(bytes[CopyKind::device_to_host], ref.dtoh);
  EXPECT_EQ(bytes[CopyKind::device_to_device], ref.dtod);
  EXPECT_EQ(bytes[CopyKind::peer_to_peer], ref.ptop);

  uint64_t steps = 0, launches = 0, transfers = 0, memory_events = 0;
  for (const Steps& t : m.steps) steps += t.size();
  for (const Launches& t : m.launches) {
    launches += t.size();
    // Every launch joins to the device op it started, but for a kernel
    // launch whose kernel the trace lacks, whose device it cannot say.
    for (size_t i = 0; i < t.size(); ++i) {
      EXPECT_TRUE(op_correlations.count(t.correlation[i]) || t.device[i] == kUnknownDevice);
      EXPECT_EQ(op_correlations.count(t.correlation[i]) == 0, t.device[i] == kUnknownDevice);
    }
  }
  for (const Transfers& t : m.transfers) {
    transfers += t.size();
    for (size_t i = 0; i < t.size(); ++i) {
      ASSERT_TRUE(copies.count(t.correlation[i]));
      EXPECT_EQ(copies[t.correlation[i]].first, t.direction[i]);
      EXPECT_EQ(copies[t.correlation[i]].second, t.bytes[i]);
    }
  }
  std::map<uint32_t, int64_t> peak;
  for (const MemoryEvents& t : m.memory) {
    memory_events += t.size();
    for (size_t i = 0; i < t.size(); ++i) peak[t.device] = std::max(peak[t.device], t.allocated[i]);
  }
  EXPECT_EQ(steps, ref.steps);
  EXPECT_EQ(launches, ref.launches);
  EXPECT_EQ(transfers, ref.transfers);
  EXPECT_EQ(memory_events, ref.memory_events);

  using Pairs = std::vector<std::pair<uint32_t, int64_t>>;
  std::map<uint32_t, int64_t> busy = loupe::test::busy_ns(m);
  EXPECT_EQ(Pairs(busy.begin(), busy.end()), ref.busy_ns);
  // And recomputed here from the raw JSON, by a second reader.
  Pairs recomputed;
  for (auto [device, ns] : loupe::test::reference_busy_ns(fixture(ref.file)))
    recomputed.push_back({uint32_t(device), ns});
  EXPECT_EQ(recomputed, ref.busy_ns);
  EXPECT_EQ(Pairs(peak.begin(), peak.end()), ref.peak_bytes);

  // Whatever was not imported is accounted for.
  EXPECT_EQ(std::stoull(m.info.meta.at("skipped_events")), result.skipped);

  // The analyses run on every real trace, and their figures are the same
  // independent counts: busy time per device (idle is the rest of the
  // window), steps (those with device work: a ProfilerStep marker with none,
  // such as mi250's trailing one, is not a step), and the memory peak.
  AnalysisReport report = analyze(m);
  Pairs analysed_busy;
  for (const DeviceIdle& d : report.devices) {
    analysed_busy.push_back({d.device, d.busy_ns});
    EXPECT_EQ(d.idle_ns, (d.window_end - d.window_start) - d.busy_ns);
  }
  EXPECT_EQ(analysed_busy, ref.busy_ns);
  EXPECT_EQ(report.metrics.steps, loupe::test::reference_steps_with_device_work(fixture(ref.file)));
  int64_t highest_peak = 0;
  for (auto [device, peak_of_device] : ref.peak_bytes) highest_peak = std::max(highest_peak, peak_of_device);
  EXPECT_EQ(report.metrics.peak_memory, highest_peak);
  EXPECT_EQ(report.metrics.kernels, ref.kernels);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, KinetoReference, ::testing::ValuesIn(references()),
                         [](const ::testing::TestParamInfo<Reference>& param) {
                           std::string name = param.param.file;
                           name = name.substr(0, name.find('.'));
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
