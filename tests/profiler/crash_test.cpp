// A process killed with SIGKILL mid-capture leaves a file that opens and
// holds every event up to its last commit, as an unbroken prefix.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "loupe/prof/clock.h"
#include "loupe/prof/trace_reader.h"
#include "test_files.h"

extern char** environ;

using namespace loupe::prof;

namespace {

struct KillResult {
  int64_t killed_at_ns;  // CLOCK_MONOTONIC
};

KillResult run_and_kill(const std::string& trace, int flush_ms, std::chrono::milliseconds run_for) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string flush = std::to_string(flush_ms);
  char* argv[] = {const_cast<char*>(LOUPE_CRASH_CHILD), const_cast<char*>(trace.c_str()), flush.data(), nullptr};
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, LOUPE_CRASH_CHILD, &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  char buf[16] = {};
  EXPECT_GT(read(out[0], buf, sizeof buf - 1), 0) << "the child starts recording";
  close(out[0]);
  std::this_thread::sleep_for(run_for);
  int64_t killed_at = monotonic_ns();
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  return {killed_at};
}

TEST(Crash, SigkillLeavesAReadablePrefix) {
  constexpr int kFlushMs = 100;
  for (int run = 0; run < 3; ++run) {
    loupe::test::TempDir dir;
    std::string path = dir.file("killed.db");
    KillResult k = run_and_kill(path, kFlushMs, std::chrono::milliseconds(1500 + 150 * run));

    TraceModel m;
    ASSERT_NO_THROW(m = load_trace(path)) << "run " << run;
    EXPECT_EQ(m.info.status, "recording") << "the capture never finished";
    ASSERT_EQ(m.counters.size(), 1u);
    const Counter& seq = m.counters[0];
    std::vector<double> values = seq.value;
    std::sort(values.begin(), values.end());
    ASSERT_FALSE(values.empty());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], double(i)) << "a hole in the sequence";
    // Commits kept coming while the program ran: the last one is recent.
    // The bound leaves room for a commit's own time and for a loaded
    // machine (sanitizer builds, parallel tests); a capture that stopped
    // committing would leave the last event seconds before the kill.
    int64_t origin = std::stoll(m.info.meta.at("origin_monotonic_ns"));
    int64_t last = seq.time.back() + origin;
    EXPECT_GT(last, k.killed_at_ns - 10 * kFlushMs * 1'000'000) << "run " << run;
    EXPECT_LT(last, k.killed_at_ns);
  }
}

}  // namespace
