// Each kind of bad file gets one clear error naming the file and the
// problem: never a crash, a hang, or a silently partial model.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "error_message.h"
#include "loupe/prof/trace_query.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_writer.h"
#include "test_files.h"

using namespace loupe::prof;

namespace {

void write_good_trace(const std::string& path, int ops = 2000) {
  TraceWriter w(path, {});
  StringId k = w.intern("k");
  for (int i = 0; i < ops; ++i) {
    w.add(DeviceOpRow{.device = 0,
                      .stream = 0,
                      .start = int64_t(i) * 100,
                      .dur = 50,
                      .kind = DeviceOpKind::kernel,
                      .name = k,
                      .bytes = 0,
                      .copy_kind = CopyKind::none,
                      .correlation = uint64_t(i)});
    w.add(HostSpanRow{.thread = 0,
                      .start = int64_t(i) * 100,
                      .dur = 10,
                      .name = k,
                      .kind = SpanKind::user,
                      .depth = 0,
                      .callsite = 0});
  }
  w.set_meta("status", "complete");
  w.close();
}

void sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err);
  std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// Marks the file as written in format version major.minor.
void set_format_version(const std::string& path, int major, int minor) {
  sql(path, "PRAGMA user_version=" + std::to_string(pack_user_version(major, minor)));
}

// The error load_trace() raises, or "" if it loaded.
std::string load_error(const std::string& path) {
  return loupe::test::error_message<TraceError>([&] { load_trace(path); });
}

void expect_error(const std::string& path, const std::string& fragment) {
  std::string error = load_error(path);
  EXPECT_NE(error.find(path), std::string::npos) << "the message names the file: " << error;
  EXPECT_NE(error.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
}

class BadTrace : public loupe::test::TempDirTest {
 protected:
  // A good trace, damaged by one SQL statement, is refused with `fragment`.
  void expect_damage_refused(const std::string& name, const std::string& damage, const std::string& fragment) {
    std::string path = dir.file(name);
    write_good_trace(path);
    sql(path, damage);
    expect_error(path, fragment);
  }
};

TEST_F(BadTrace, MissingFile) { expect_error(dir.file("nope.db"), "No such file"); }

TEST_F(BadTrace, Directory) { expect_error(dir.path().string(), "is a directory"); }

TEST_F(BadTrace, EmptyFile) {
  std::string path = dir.file("empty.db");
  std::ofstream(path).close();
  expect_error(path, "empty");
}

TEST_F(BadTrace, RandomBytes) {
  std::string path = dir.file("random.db");
  std::mt19937 rng(7);
  std::ofstream f(path, std::ios::binary);
  for (int i = 0; i < 100'000; ++i) f.put(char(rng()));
  f.close();
  expect_error(path, "not a SQLite database");
}

TEST_F(BadTrace, Truncated) {
  std::string path = dir.file("truncated.db");
  write_good_trace(path, 20'000);
  auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 2);
  expect_error(path, "truncated");
}

TEST_F(BadTrace, DatabaseOfAnotherProgram) {
  std::string path = dir.file("other.db");
  sql(path, "CREATE TABLE contacts(name TEXT, phone TEXT); INSERT INTO contacts VALUES ('a', 'b');");
  expect_error(path, "another program");
}

TEST_F(BadTrace, NewerMajorVersion) {
  std::string path = dir.file("newer.db");
  write_good_trace(path);
  set_format_version(path, kFormatMajor + 1, 0);
  expect_error(path, "newer than this loupe reads");
}

TEST_F(BadTrace, NewerMinorVersionIsRead) {
  std::string path = dir.file("minor.db");
  write_good_trace(path);
  set_format_version(path, kFormatMajor, kFormatMinor + 3);
  sql(path, "ALTER TABLE device_ops ADD COLUMN future INTEGER NOT NULL DEFAULT 0; CREATE TABLE future_table(x);");
  EXPECT_EQ(load_error(path), "");
}

// A 1.1 file was written before the collectives table existed: it reads,
// with no collectives, and `loupe info` counts 0 rows of it. A 1.2
// file without it is damaged.
TEST_F(BadTrace, OlderMinorVersionWithoutALaterTableIsRead) {
  std::string path = dir.file("older.db");
  write_good_trace(path);
  set_format_version(path, 1, 1);
  sql(path, "DROP TABLE collectives; DELETE FROM tracks WHERE tbl = 'collectives';");
  EXPECT_EQ(load_error(path), "");
  TraceModel m = load_trace(path);
  EXPECT_TRUE(m.collectives.empty());
  EXPECT_GT(m.total_events(), 0u);
  uint64_t counted = 0;
  for (const TableCount& c : summarize_trace(path).counts) counted += c.rows;
  EXPECT_EQ(counted, m.total_events());

  set_format_version(path, 1, 2);
  expect_error(path, "missing table 'collectives'");
}

// A 1.4 file has neither `syncs` nor its enumeration `sync_kinds`.
TEST_F(BadTrace, AFileOlderThanTheSyncsTableIsRead) {
  std::string path = dir.file("older-syncs.db");
  write_good_trace(path);
  set_format_version(path, 1, 4);
  sql(path, "DROP TABLE syncs; DROP TABLE sync_kinds; DELETE FROM tracks WHERE tbl = 'syncs';");
  EXPECT_EQ(load_error(path), "");
  EXPECT_TRUE(load_trace(path).syncs.empty());

  set_format_version(path, 1, 5);
  expect_error(path, "missing table 'sync_kinds'");
}

TEST_F(BadTrace, OlderMinorVersionWithoutALaterColumnIsRead) {
  std::string path = dir.file("older-column.db");
  write_good_trace(path);
  sql(path, "INSERT INTO devices VALUES (0, 'gpu0', 1, 0, 0, 'cuBLAS');");
  set_format_version(path, 1, 2);
  sql(path, "ALTER TABLE devices DROP COLUMN detail;");
  EXPECT_EQ(load_error(path), "");
  TraceModel m = load_trace(path);
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].name, "gpu0");
  EXPECT_EQ(m.devices[0].detail, "");
  EXPECT_EQ(summarize_trace(path).devices.size(), 1u);

  set_format_version(path, 1, 3);
  expect_error(path, "table 'devices' lacks column 'detail'");
}

// A 1.3 file's call sites have no parent: each reads as one frame.
TEST_F(BadTrace, CallSitesOfAnOlderMinorVersionAreOneFrameEach) {
  std::string path = dir.file("older-callsites.db");
  write_good_trace(path);
  sql(path, "INSERT INTO callsites VALUES (77, 1, 3, 1, 0);");
  set_format_version(path, 1, 3);
  sql(path, "ALTER TABLE callsites DROP COLUMN parent;");
  EXPECT_EQ(load_error(path), "");
  TraceModel m = load_trace(path);
  ASSERT_NE(m.callsite(77), nullptr);
  EXPECT_EQ(m.callsite(77)->line, 3u);
  EXPECT_EQ(m.callsite(77)->parent, 0u);

  set_format_version(path, 1, 4);
  expect_error(path, "table 'callsites' lacks column 'parent'");
}

// A parent that is not an earlier call site could make a stack without end.
TEST_F(BadTrace, CallSiteWhoseParentIsNotEarlierIsRefused) {
  expect_damage_refused("cycle.db",
                        "INSERT INTO callsites VALUES (5, 1, 1, 1, 6); "
                        "INSERT INTO callsites VALUES (6, 1, 2, 1, 5);",
                        "call site 5 has parent 6, which is not an earlier call site");
}

TEST_F(BadTrace, TableReplacedByView) {
  expect_damage_refused(
      "view.db",
      "DROP TABLE device_ops; CREATE VIEW device_ops AS SELECT 0 AS device, 0 AS stream, 0 AS start, 0 AS id, 0 AS "
      "dur, 0 AS kind, 0 AS name, 0 AS bytes, 0 AS copy_kind, 0 AS correlation;",
      "'device_ops' is a view, not a table");
}

TEST_F(BadTrace, MissingTable) { expect_damage_refused("missing.db", "DROP TABLE steps;", "missing table 'steps'"); }

TEST_F(BadTrace, MissingColumn) {
  expect_damage_refused("column.db", "ALTER TABLE host_spans DROP COLUMN callsite;",
                        "'host_spans' lacks column 'callsite'");
}

TEST_F(BadTrace, WrongColumnType) {
  expect_damage_refused(
      "type.db",
      "DROP TABLE steps; CREATE TABLE steps(thread TEXT, start INTEGER, id INTEGER, dur INTEGER, number INTEGER);",
      "'steps.thread' is declared TEXT, expected INTEGER");
}

TEST_F(BadTrace, DanglingStringReference) {
  expect_damage_refused("dangling.db", "UPDATE device_ops SET name = 999999 WHERE start = 500;",
                        "device_ops: name refers to string id 999999");
}

TEST_F(BadTrace, NegativeDuration) {
  expect_damage_refused("negative.db", "UPDATE host_spans SET dur = -5 WHERE start = 300;",
                        "host_spans: negative duration -5 ns");
}

TEST_F(BadTrace, UnknownCallSite) {
  expect_damage_refused("callsite.db", "UPDATE host_spans SET callsite = 12 WHERE start = 300;",
                        "callsite 12 is not in the callsites table");
}

TEST_F(BadTrace, CorruptPagesInTheMiddle) {
  // Overwrite a run of pages after the schema with noise: SQLite notices
  // while reading, and the reader reports it instead of crashing.
  std::string path = dir.file("corrupt.db");
  write_good_trace(path, 50'000);
  auto size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    std::mt19937 rng(3);
    f.seekp(std::streamoff(size / 2));
    for (int i = 0; i < 65536; ++i) f.put(char(rng()));
  }
  std::string error = load_error(path);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
}

TEST_F(BadTrace, GoodTraceLoads) {
  std::string path = dir.file("good.db");
  write_good_trace(path);
  TraceModel m = load_trace(path);
  EXPECT_EQ(m.count_device_ops(), 2000u);
  EXPECT_EQ(m.count_host_spans(), 2000u);
}

}  // namespace
