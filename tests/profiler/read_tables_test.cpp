// load_trace with ReadOptions::tables: only the event tables asked for are
// read, each exactly as a full read has it; the small tables always are.
#include <gtest/gtest.h>

#include <stdexcept>

#include "loupe/prof/synth.h"
#include "loupe/prof/trace_reader.h"
#include "test_files.h"

using namespace loupe::prof;

namespace {

TEST(ReadTables, OnlyTheTablesAskedForAreRead) {
  loupe::test::TempDir dir;
  std::string path = dir.file("s.db");
  write_synthetic_trace(path, {.events = 50'000, .seed = 4});
  TraceModel full = load_trace(path);
  TraceModel part = load_trace(path, {.tables = std::vector<std::string>{"device_ops", "steps"}});

  ASSERT_FALSE(full.device_ops.empty());
  ASSERT_EQ(part.device_ops.size(), full.device_ops.size());
  for (size_t i = 0; i < full.device_ops.size(); ++i) {
    const DeviceOps &a = part.device_ops[i], &b = full.device_ops[i];
    EXPECT_EQ(std::tie(a.device, a.stream), std::tie(b.device, b.stream));
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.dur, b.dur);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.kind, b.kind);
  }
  ASSERT_EQ(part.steps.size(), full.steps.size());
  EXPECT_EQ(part.count_device_ops(), full.count_device_ops());
  uint64_t steps = 0;
  for (const Steps& t : full.steps) steps += t.size();
  EXPECT_EQ(part.total_events(), full.count_device_ops() + steps);
  EXPECT_TRUE(part.host_spans.empty());
  EXPECT_TRUE(part.launches.empty());
  EXPECT_TRUE(part.memory.empty());
  EXPECT_EQ(part.strings, full.strings);
  EXPECT_EQ(part.devices.size(), full.devices.size());
  EXPECT_EQ(part.threads.size(), full.threads.size());
  EXPECT_EQ(part.info.meta, full.info.meta);
}

TEST(ReadTables, NoEventTablesReadsTheRest) {
  loupe::test::TempDir dir;
  std::string path = dir.file("s.db");
  write_synthetic_trace(path, {.events = 5'000, .seed = 5});
  TraceModel m = load_trace(path, {.tables = std::vector<std::string>{}});
  EXPECT_EQ(m.total_events(), 0u);
  EXPECT_EQ(m.start_ns, 0);
  EXPECT_EQ(m.end_ns, 0);
  EXPECT_FALSE(m.strings.empty());
  EXPECT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.info.status, "complete");
}

TEST(ReadTables, AnUnknownTableIsRefused) {
  loupe::test::TempDir dir;
  std::string path = dir.file("s.db");
  write_synthetic_trace(path, {.events = 1'000, .seed = 6});
  try {
    load_trace(path, {.tables = std::vector<std::string>{"device_ops", "kernels"}});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "no event table 'kernels'");
  }
}

}  // namespace
