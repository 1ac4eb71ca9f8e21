#include <gtest/gtest.h>

#include "error_message.h"
#include "loupe/prof/synth.h"
#include "loupe/prof/trace_query.h"
#include "loupe/prof/trace_reader.h"
#include "test_files.h"

using namespace loupe::prof;

namespace {

std::vector<QueryRow> run(const std::string& path, const std::string& sql, std::vector<std::string>* cols = nullptr) {
  std::vector<QueryRow> rows;
  query_trace(
      path, sql,
      [&](const std::vector<std::string>& c) {
        if (cols) *cols = c;
      },
      [&](const QueryRow& r) { rows.push_back(r); });
  return rows;
}

std::string error_of(const std::string& path, const std::string& sql) {
  return loupe::test::error_message<TraceError>([&] { run(path, sql); });
}

TEST(Query, ReturnsColumnsAndRows) {
  loupe::test::TempDir dir;
  std::string path = dir.file("q.db");
  write_synthetic_trace(path, {.events = 5000});
  std::vector<std::string> cols;
  auto rows = run(path, "SELECT name, kind FROM devices ORDER BY id", &cols);
  ASSERT_EQ(cols, (std::vector<std::string>{"name", "kind"}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(*rows[0][0], "Synthetic GPU 0");
  EXPECT_EQ(*rows[1][1], "1");
  auto nulls = run(path, "SELECT NULL");
  ASSERT_EQ(nulls.size(), 1u);
  EXPECT_FALSE(nulls[0][0].has_value());
  // The enum tables make queries readable.
  auto kinds = run(path,
                   "SELECT k.name, count(*) FROM device_ops d JOIN device_op_kinds k ON k.id = d.kind "
                   "GROUP BY k.name ORDER BY k.name");
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(*kinds[0][0], "kernel");
  EXPECT_EQ(*kinds[1][0], "memcpy");
}

TEST(Query, RefusesWritesAndSeveralStatements) {
  loupe::test::TempDir dir;
  std::string path = dir.file("q.db");
  write_synthetic_trace(path, {.events = 100});
  EXPECT_NE(error_of(path, "DELETE FROM device_ops").find("read-only"), std::string::npos);
  EXPECT_NE(error_of(path, "INSERT INTO meta VALUES ('a','b')").find("read-only"), std::string::npos);
  EXPECT_NE(error_of(path, "SELECT 1; SELECT 2").find("one statement"), std::string::npos);
  EXPECT_NE(error_of(path, "SELEC 1").find("syntax error"), std::string::npos);
  EXPECT_NE(error_of(path, "SELECT * FROM nope").find("no such table: nope"), std::string::npos);
  EXPECT_NE(error_of(path, "ATTACH 'other.db' AS o").find(path), std::string::npos);
  EXPECT_EQ(load_trace(path).total_events(), 100u) << "the file is untouched";
}

TEST(Query, SummaryCountsMatchTheModel) {
  loupe::test::TempDir dir;
  std::string path = dir.file("q.db");
  write_synthetic_trace(path, {.events = 30'000});
  TraceSummary s = summarize_trace(path);
  TraceModel m = load_trace(path);
  uint64_t total = 0;
  for (const TableCount& c : s.counts) total += c.rows;
  EXPECT_EQ(total, 30'000u);
  for (const TableCount& c : s.counts) {
    if (c.table == "device_ops") {
      EXPECT_EQ(c.rows, m.count_device_ops());
    }
    if (c.table == "host_spans") {
      EXPECT_EQ(c.rows, m.count_host_spans());
    }
  }
  EXPECT_EQ(s.start_ns, m.start_ns);
  EXPECT_EQ(s.end_ns, m.end_ns);
  EXPECT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.info.producer, "loupe synth");
}

}  // namespace
