// XPlane import: the two runs of tests/fixtures/jax_profile, each recorded
// by jax.profiler on this machine's CPU, hold the same run twice, as
// <host>.xplane.pb and as the <host>.trace.json.gz XProf made of it. Read
// from either, loupe must find the same events: the JSON's 481 complete
// events of the newer run (393 of the older), counted with Python's json
// module, as host spans, and the same compiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "import/import_test_util.h"
#include "loupe/prof/import.h"
#include "profiler/test_files.h"

namespace {

using loupe::prof::ImportFormat;
using loupe::prof::TraceModel;

const std::string kRuns = LOUPE_REPO_FIXTURES "/jax_profile/plugins/profile/";

// Host spans as (thread name, start, dur, name, kind, depth), sorted.
std::vector<std::tuple<std::string, int64_t, int64_t, std::string, int, uint32_t>> spans_of(const TraceModel& m) {
  std::vector<std::tuple<std::string, int64_t, int64_t, std::string, int, uint32_t>> out;
  for (const auto& t : m.host_spans) {
    for (size_t i = 0; i < t.size(); ++i) {
      out.emplace_back(m.thread(t.thread)->name, t.start[i], t.dur[i], m.str(t.name[i]), int(t.kind[i]), t.depth[i]);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Compiles as (function, kind, start, dur, trace, codegen), sorted.
std::vector<std::tuple<std::string, int, int64_t, int64_t, int64_t, int64_t>> compiles_of(const TraceModel& m) {
  std::vector<std::tuple<std::string, int, int64_t, int64_t, int64_t, int64_t>> out;
  for (const auto& t : m.compiles) {
    for (size_t i = 0; i < t.size(); ++i) {
      out.emplace_back(m.str(t.function[i]), int(t.kind[i]), t.start[i], t.dur[i], t.trace_ns[i], t.codegen_ns[i]);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_same_as_json(const std::string& run, size_t json_complete_events) {
  SCOPED_TRACE(run);
  loupe::test::TempDir dir;
  loupe::prof::ImportResult from_xplane, from_json;
  TraceModel x = loupe::test::import_and_load(kRuns + run + "/host0.xplane.pb", dir.file("x.db"),
                                              ImportFormat::auto_detect, &from_xplane);
  TraceModel j = loupe::test::import_and_load(kRuns + run + "/host0.trace.json.gz", dir.file("j.db"),
                                              ImportFormat::auto_detect, &from_json);
  EXPECT_EQ(from_xplane.format, ImportFormat::xplane);
  EXPECT_EQ(from_json.format, ImportFormat::jax);
  EXPECT_EQ(x.count_host_spans(), json_complete_events);
  EXPECT_EQ(from_xplane.rows_by_table, from_json.rows_by_table);
  EXPECT_EQ(spans_of(x), spans_of(j));
  EXPECT_EQ(compiles_of(x), compiles_of(j));
  EXPECT_FALSE(compiles_of(x).empty());
  EXPECT_EQ(x.end_ns - x.start_ns, j.end_ns - j.start_ns);
  EXPECT_EQ(x.info.meta.at("source_format"), "xplane");
  EXPECT_EQ(x.info.meta.at("hostname"), "vm");  // XSpace.hostnames of the machine that recorded it
}

TEST(XplaneImport, EachRunReadsAsTheJsonXprofMadeOfIt) {
  expect_same_as_json("2026_01_02_11_30_00", 481);
  expect_same_as_json("2026_01_02_10_00_00", 393);
}

TEST(XplaneImport, ACutFileSaysWhereItEnds) {
  loupe::test::TempDir dir;
  std::string whole = loupe::test::read_binary(kRuns + "2026_01_02_10_00_00/host0.xplane.pb");
  std::string cut = dir.file("cut.xplane.pb");
  loupe::test::write_text(cut, whole.substr(0, 300));
  try {
    loupe::prof::import_trace(cut, dir.file("cut.db"));
    FAIL() << "a cut XPlane was imported";
  } catch (const loupe::prof::ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.xplane.pb: at byte 0: a field of"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("runs past the end"), std::string::npos) << e.what();
  }
}

// A JSON trace may begin with a newline (0x0a, as a protobuf's first
// field does): it is still JSON.
TEST(XplaneImport, JsonBeginningWithANewlineIsStillJson) {
  loupe::test::TempDir dir;
  std::string path = dir.file("newline.json");
  loupe::test::write_text(path,
                          "\n{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, "
                          "\"ts\": 1, \"dur\": 2}]}");
  EXPECT_EQ(loupe::prof::detect_import_format(path), ImportFormat::chrome);
}

}  // namespace
