// Capture hooks (capture.h): start hooks run once a capture records, stop
// hooks when it stops while it still records, so that a collector that
// holds events elsewhere (CUPTI) covers the whole capture and hands over
// everything.
#include <gtest/gtest.h>

#include <atomic>

#include "loupe/prof/capture.h"
#include "loupe/prof/record.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"

using namespace loupe::prof;

namespace {

std::atomic<int> g_starts{0}, g_stops{0};
std::atomic<bool> g_armed{false};

void on_start() {
  if (!g_armed.load()) return;
  ++g_starts;
  instant("collector started");
}

void on_stop() {
  if (!g_armed.load()) return;
  ++g_stops;
  instant("handed over at stop");
}

size_t count(const TraceModel& m, const std::string& name) {
  size_t found = 0;
  for (const Instants& i : m.instants)
    for (size_t k = 0; k < i.size(); ++k) found += m.str(i.name[k]) == name;
  return found;
}

TEST(CaptureHooks, RunOnceEachWhileTheCaptureRecords) {
  static bool registered = [] {
    on_capture_start(on_start);
    on_capture_stop(on_stop);
    return true;
  }();
  (void)registered;
  loupe::test::TempDir dir;
  g_armed = true;
  {
    Capture capture({.path = dir.file("t.db")});
    instant("between");
    capture.stop();
    capture.stop();  // idempotent: the hook does not run again
  }
  g_armed = false;
  EXPECT_EQ(g_starts.load(), 1);
  EXPECT_EQ(g_stops.load(), 1);
  TraceModel m = load_trace(dir.file("t.db"));
  EXPECT_EQ(count(m, "collector started"), 1u);
  EXPECT_EQ(count(m, "between"), 1u);
  EXPECT_EQ(count(m, "handed over at stop"), 1u);
}

}  // namespace
