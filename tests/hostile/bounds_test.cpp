// Sizes a stranger chooses: many tracks, an enormous name, a timeout past
// the clock's range, a query that makes gigabytes, a wall clock at the
// end of int64. Each costs memory and time in proportion to what is real,
// or is refused with a message (docs/reliability.md).
#include <fmt/format.h>
#include <zlib.h>

#include "hostile_util.h"
#include "import/nsys_export_writer.h"

namespace loupe::hostile {
namespace {

class HostileBounds : public loupe::test::TempDirTest {};

// Defect 12: 200,000 streams in an 18 MB trace made `analyze` take 4.3 GB,
// about 21 KB a track: each track reserved its whole read unit's rows.
TEST_F(HostileBounds, ManyTracksCostMemoryInProportionToTheirRows) {
  std::string json = dir.file("streams.json");
  {
    std::string text = R"({"schemaVersion": 1, "traceEvents": [)";
    for (int i = 0; i < 200'000; ++i) {
      text += fmt::format(R"({}{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": {}, "dur": 1, )"
                          R"("args": {{"device": 0, "stream": {}, "correlation": {}}}}})",
                          i == 0 ? "" : ",", 10 + i, i + 1, i + 1);
    }
    write_file(json, text + "]}");
  }
  std::string trace = dir.file("streams.db");
  RunResult i = loupe({"import", json, "-o", trace, "-q"}, {.timeout_s = 120});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  ASSERT_EQ(query_int(trace, "SELECT count(DISTINCT stream) FROM device_ops"), 200'000);
  RunResult a = loupe({"analyze", trace}, {.timeout_s = 120, .stdout_to_null = true});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_LT(a.max_rss_kb, 1'500'000) << "kB for 200,000 one-row tracks";
}

// Defect 12: one 1 GiB name in a 1 MB gzip made the import take 3.1 GB and
// then fail on a constraint; a 200 MB name cost 655 MB. An event larger
// than any real one is refused, in bounded memory.
TEST_F(HostileBounds, AnEnormousEventIsRefusedInBoundedMemory) {
  std::string gz = dir.file("name.json.gz");
  gzFile f = gzopen(gz.c_str(), "wb1");
  ASSERT_NE(f, nullptr);
  std::string head = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")";
  gzwrite(f, head.data(), unsigned(head.size()));
  std::string chunk(1 << 20, 'x');
  for (int mb = 0; mb < 200; ++mb) gzwrite(f, chunk.data(), unsigned(chunk.size()));
  std::string tail = R"(", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]})";
  gzwrite(f, tail.data(), unsigned(tail.size()));
  gzclose(f);
  RunResult r = loupe({"import", gz, "-o", dir.file("name.db")}, {.timeout_s = 60});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(gz + ": at byte 17: an event or value larger than 64 MiB"), std::string::npos) << r.err;
  EXPECT_LT(r.max_rss_kb, 400'000) << "kB to refuse a 200 MB name";
  EXPECT_FALSE(std::filesystem::exists(dir.file("name.db")));
}

// Defect 16: `sql --timeout 1e308` stopped every query at once (the limit
// wrapped in the clock's 64 bits); zeroblob(400000000) took 2.7 GB; a
// printf 2^31 characters wide ran past --timeout.
TEST_F(HostileBounds, QueriesAreBoundedAndAHugeTimeoutIsNoLimit) {
  std::string trace = synth_trace(dir, "t.db", 2000);
  RunResult r = loupe({"sql", trace, "SELECT count(*) FROM device_ops", "--timeout", "1e308"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("count(*)"), std::string::npos) << r.out;
  // A value past 64 MiB: refused (zeroblob), or NULL (printf, as SQLite
  // makes it when a string would be too long); at once, in little memory.
  struct Case {
    const char* query;
    int exit_code;
    const char* says;
  };
  for (const Case& c : {Case{"SELECT length(zeroblob(400000000))", 2, "string or blob too big"},
                        Case{"SELECT length(printf('%2147483647d', 1)) AS n", 0, "NULL"}}) {
    auto start = std::chrono::steady_clock::now();
    r = loupe({"sql", trace, c.query, "--timeout", "5"}, {.timeout_s = 60});
    EXPECT_EQ(r.exit_code, c.exit_code) << c.query << ": " << r.err;
    EXPECT_NE((r.out + r.err).find(c.says), std::string::npos) << c.query << ": " << r.out << r.err;
    EXPECT_LT(r.max_rss_kb, 500'000) << c.query;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << c.query;
  }
}

// Defect 16: an Nsight Systems export whose session started at utcEpochNs
// = 2^63 - 1 showed "started 1677-09-21": the wall clock wrapped.
TEST_F(HostileBounds, AWallClockAtTheEndOfInt64IsUnknownNotWrapped) {
  std::string nsys = dir.file("report.sqlite");
  {
    loupe::test::NsysExportWriter w(nsys);
    w.create_schema();
    w.session_start(INT64_MAX);
    w.gpu(0, "GPU", int64_t(16) << 30);
    w.kernel(1000, 2000, 0, 7, 1, "k");
  }
  std::string trace = dir.file("report.db");
  RunResult r = loupe({"import", nsys, "-o", trace, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = loupe({"info", trace});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("1677"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("started"), std::string::npos) << "no wall clock to show: " << r.out;
}

// Defect 16: `loupe capture -o ''` said "filesystem error: cannot make
// absolute path".
TEST_F(HostileBounds, AnEmptyOutputNameIsNamedAsSuch) {
  for (const char* command : {"capture", "record"}) {
    RunResult r = loupe({command, "-o", "", "--", "/bin/true"});
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("'': is no file name; name the file to write"), std::string::npos) << command << ": " << r.err;
  }
}

}  // namespace
}  // namespace loupe::hostile
