// Traces whose rows lie: the reader verifies every row and every count it
// uses instead of trusting the file, and no query runs unbounded.
#include <nlohmann/json.hpp>

#include "hostile_util.h"

namespace loupe::hostile {
namespace {

class HostileTrace : public loupe::test::TempDirTest {
 protected:
  std::string trace = synth_trace(dir, "t.db", 20'000);
  static constexpr const char* kFirstKernel = "(SELECT min(id) FROM device_ops WHERE kind = 0)";

  // The command fails with exit 2, quickly, with every piece in its message.
  void expect_refused(const std::vector<std::string>& args, const std::vector<std::string>& pieces) {
    RunResult r = loupe(args, {.timeout_s = 20});
    EXPECT_FALSE(r.timed_out) << args[0] << " took too long";
    EXPECT_EQ(r.exit_code, 2) << args[0] << ":\n" << r.out.substr(0, 2000) << r.err;
    for (const std::string& p : pieces) EXPECT_NE(r.err.find(p), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
};

// Defect 7: an enum table replaced by an infinitely recursive view made
// `loupe sql` run forever.
TEST_F(HostileTrace, SqlChecksTheSchemaFirst) {
  tamper(trace,
         "DROP TABLE span_kinds;"
         "CREATE VIEW span_kinds(id, name) AS WITH RECURSIVE r(id, name) AS "
         "(SELECT 0, 'x' UNION ALL SELECT id + 1, 'x' FROM r) SELECT id, name FROM r;");
  expect_refused({"sql", trace, "SELECT count(*) FROM span_kinds"}, {trace, "'span_kinds' is a view, not a table"});
}

TEST_F(HostileTrace, SqlStopsAQueryAtItsTimeout) {
  auto start = std::chrono::steady_clock::now();
  expect_refused({"sql", trace,
                  "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
                  "SELECT count(*) FROM r",
                  "--timeout", "1"},
                 {trace, "stopped after 1 s (--timeout)"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// Defect 8: start + dur past the largest int64 was accepted and made
// totals negative.
TEST_F(HostileTrace, AnEndPastTheLargestTimeIsRefused) {
  tamper(trace, std::string("UPDATE device_ops SET dur = 9223372036854775000 WHERE id = ") + kFirstKernel);
  for (const char* command : {"summary", "analyze", "export"}) {
    std::vector<std::string> args = {command, trace};
    if (std::string(command) == "export") args.insert(args.end(), {"--chrome", dir.file("x.json")});
    expect_refused(args, {trace, "device_ops", "start + dur"});
  }
}

TEST_F(HostileTrace, ImportedTimesNearTheEndsOfInt64DoNotWrap) {
  // Chrome trace events at +-9.2e18 ns (+-292 years), with one in range.
  std::string json = dir.file("wrap.json");
  write_file(json, R"({"traceEvents": [
    {"ph": "X", "name": "early", "pid": 1, "tid": 1, "ts": -9223372036854775, "dur": 1},
    {"ph": "X", "name": "late", "pid": 1, "tid": 1, "ts": 9223372036854775, "dur": 1000},
    {"ph": "X", "name": "normal", "pid": 1, "tid": 1, "ts": 1000, "dur": 5}
  ]})");
  std::string out = dir.file("wrap.db");
  RunResult r = loupe({"import", json, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("skipped 2 source events"), std::string::npos) << r.out;
  RunResult info = loupe({"info", out});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  RunResult summary = loupe({"summary", out, "--json"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  auto doc = nlohmann::json::parse(summary.out);
  ASSERT_EQ(doc["host_spans"].size(), 1u) << summary.out;
  EXPECT_EQ(doc["host_spans"][0]["name"], "normal");
  EXPECT_EQ(doc["host_spans"][0]["total"], 5000);
}

// Durations each within range can still add up past int64: the rules and
// statistics total them (found by the trace_rows fuzz target's first run
// under UBSan: signed overflow in statistics.cpp and tiny_kernels.cpp).
TEST_F(HostileTrace, DurationsThatAddUpPastTheLargestTotalAreRefused) {
  tamper(trace,
         "UPDATE device_ops SET dur = 4611686018427387903 - start - 10 WHERE kind = 0;"
         "UPDATE tracks SET last_end = (SELECT max(start + dur) FROM device_ops d "
         "WHERE d.device = tracks.a AND d.stream = tracks.b) WHERE tbl = 'device_ops';");
  for (const char* command : {"summary", "analyze"}) {
    expect_refused({command, trace}, {trace, "device_ops", "'dur' add up to 2^60 or more"});
  }
  // An import of such events fails instead of writing a trace loupe refuses.
  std::string json = dir.file("long.json");
  write_file(json, R"({"traceEvents": [
    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 2305843009213693},
    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 0, "dur": 2305843009213693}
  ]})");
  expect_refused({"import", json, "-o", dir.file("long.db")}, {json, "add up to 2^60 or more"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("long.db")));
}

// Defect 10: NULLs and text in integer columns were read as 0.
TEST_F(HostileTrace, NullInAnIntegerColumnIsRefused) {
  tamper(trace, "UPDATE sqlite_schema SET sql = replace(sql, 'NOT NULL', '') WHERE name = 'device_ops';");
  tamper(trace, std::string("UPDATE device_ops SET dur = NULL WHERE id = ") + kFirstKernel);
  expect_refused({"summary", trace}, {trace, "device_ops", "'dur' is NULL"});
}

TEST_F(HostileTrace, TextInAnIntegerColumnIsRefused) {
  tamper(trace, std::string("UPDATE device_ops SET kind = 'kernel' WHERE id = ") + kFirstKernel);
  expect_refused({"analyze", trace}, {trace, "device_ops", "'kind' holds text, not an integer"});
  trace = synth_trace(dir, "t2.db", 2000);
  tamper(trace, "UPDATE threads SET name = X'41' WHERE id = (SELECT min(id) FROM threads)");
  expect_refused({"analyze", trace}, {trace, "threads", "'name' holds a blob, not text"});
}

TEST_F(HostileTrace, AnEnumValueOutOfRangeIsRefused) {
  tamper(trace, std::string("UPDATE device_ops SET kind = 77 WHERE id = ") + kFirstKernel);
  expect_refused({"analyze", trace}, {trace, "device_ops", "kind 77"});
}

// Defect 11: the tracks table was trusted. A huge row count gave
// std::bad_alloc, 800k fake rows made analyze take 21 s, and an empty
// table made `info` report a duration of 0 ns.
TEST_F(HostileTrace, AHugeTrackRowCountIsRefused) {
  tamper(trace, "UPDATE tracks SET rows = 4611686018427387904 WHERE tbl = 'device_ops'");
  expect_refused({"analyze", trace}, {trace, "tracks", "device_ops"});
  expect_refused({"info", trace}, {trace, "tracks", "device_ops"});
}

TEST_F(HostileTrace, FakeTracksAreRefusedQuickly) {
  tamper(trace,
         "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 800000) "
         "INSERT INTO tracks SELECT 'device_ops', 1000 + i, 0, 1, 0, 1 FROM n;");
  expect_refused({"analyze", trace}, {trace, "tracks", "device_ops"});
}

TEST_F(HostileTrace, AnEmptyTracksTableIsRefused) {
  tamper(trace, "DELETE FROM tracks");
  expect_refused({"info", trace}, {trace, "tracks"});
  expect_refused({"summary", trace}, {trace, "tracks"});
}

TEST_F(HostileTrace, ATrackWhoseExtentLiesIsRefused) {
  tamper(trace, "UPDATE tracks SET last_end = first_start WHERE tbl = 'host_spans'");
  expect_refused({"analyze", trace}, {trace, "tracks", "host_spans"});
}

// The untouched trace passes every check above.
TEST_F(HostileTrace, TheUntouchedTraceReads) {
  for (const char* command : {"info", "summary", "analyze"}) {
    RunResult r = loupe({command, trace});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
  }
}

}  // namespace
}  // namespace loupe::hostile
