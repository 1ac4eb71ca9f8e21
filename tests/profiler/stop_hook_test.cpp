// Capture stop hooks (capture.h: on_capture_stop): they run when a capture
// stops, while it still records, so that what a collector held reaches
// the file.
#include <gtest/gtest.h>

#include <atomic>

#include "loupe/prof/capture.h"
#include "loupe/prof/record.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"

using namespace loupe::prof;

namespace {

std::atomic<int> g_calls{0};
std::atomic<bool> g_armed{false};

void hook() {
  if (!g_armed.load()) return;
  ++g_calls;
  instant("handed over at stop");
}

TEST(CaptureStopHook, RunsOnceWhileTheCaptureStillRecords) {
  static bool registered = [] {
    on_capture_stop(hook);
    return true;
  }();
  (void)registered;
  loupe::test::TempDir dir;
  g_armed = true;
  {
    Capture capture({.path = dir.file("t.db")});
    instant("before");
    capture.stop();
    capture.stop();  // idempotent: the hook does not run again
  }
  g_armed = false;
  EXPECT_EQ(g_calls.load(), 1);
  TraceModel m = load_trace(dir.file("t.db"));
  size_t found = 0;
  for (const Instants& i : m.instants)
    for (size_t k = 0; k < i.size(); ++k) found += m.str(i.name[k]) == "handed over at stop";
  EXPECT_EQ(found, 1u);
}

}  // namespace
