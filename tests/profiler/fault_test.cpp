// Faults that happen in real runs: a full disk, a kill, a reader while the
// file is written, and many threads filling small buffers.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "capture_threads.h"
#include "loupe/prof/capture.h"
#include "loupe/prof/clock.h"
#include "loupe/prof/record.h"
#include "loupe/prof/trace_reader.h"
#include "run_command.h"
#include "test_files.h"

using namespace loupe::prof;

namespace {

// The counter values of a trace, sorted.
std::vector<double> sequence(const TraceModel& m) {
  std::vector<double> v;
  for (const Counter& c : m.counters) v.insert(v.end(), c.value.begin(), c.value.end());
  std::sort(v.begin(), v.end());
  return v;
}

bool is_prefix(const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != double(i)) return false;
  }
  return true;
}

TEST(Fault, DiskFullMidCaptureLosesEventsButNotTheProgramOrTheFile) {
  loupe::test::TempDir dir;
  std::string path = dir.file("full.db");
  const long long kEvents = 600'000;  // tens of MB of rows; the limit is 2 MB
  auto r = loupe::test::run_command({LOUPE_CRASH_CHILD, path, "50", std::to_string(kEvents), "2000000"},
                                    dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << "the program ran to completion\n" << r.err;
  EXPECT_NE(r.err.find("cannot write trace"), std::string::npos) << r.err;
  unsigned long long recorded = 0, dropped = 0, lost = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "ready\nrecorded %llu dropped %llu lost %llu", &recorded, &dropped, &lost), 3)
      << r.out;
  EXPECT_GT(lost, 0u);
  // Every event is accounted for: written, dropped or lost.
  EXPECT_EQ(recorded + dropped + lost, uint64_t(kEvents) + kEvents / 16);  // counters and spans
  TraceModel m = load_trace(path);
  EXPECT_EQ(m.total_events(), recorded) << "the file holds what was written";
  EXPECT_EQ(m.info.status, "incomplete");
  EXPECT_GT(m.info.lost_events, 0u);
  EXPECT_NE(m.info.meta.at("write_error").find("cannot write trace"), std::string::npos);
}

pid_t spawn_recorder(const std::string& trace, int flush_ms) {
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
  EXPECT_GT(read(out[0], buf, sizeof buf - 1), 0);
  close(out[0]);
  return pid;
}

// A process killed at any moment leaves a file that opens and holds every
// event up to its last commit, as an unbroken prefix.
TEST(Fault, SigkillAndSigtermLeaveAReadablePrefix) {
  constexpr int kFlushMs = 100;
  for (int sig : {SIGKILL, SIGTERM, SIGKILL}) {
    loupe::test::TempDir dir;
    std::string path = dir.file("killed.db");
    pid_t pid = spawn_recorder(path, kFlushMs);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500 + 37 * sig));
    int64_t killed_at = monotonic_ns();
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig);
    TraceModel m;
    ASSERT_NO_THROW(m = load_trace(path)) << "signal " << sig;
    EXPECT_EQ(m.info.status, "recording") << "the capture never finished";
    std::vector<double> seq = sequence(m);
    ASSERT_FALSE(seq.empty());
    EXPECT_TRUE(is_prefix(seq)) << "signal " << sig;
    // Commits kept coming while the program ran: the last one is recent.
    // The bound leaves room for a commit's own time and for a loaded
    // machine (sanitizer builds, parallel tests); a capture that stopped
    // committing would leave the last event seconds before the kill.
    // bench/run_kill.py measures the loss precisely over many runs.
    int64_t last = m.counters[0].time.back() + std::stoll(m.info.meta.at("origin_monotonic_ns"));
    EXPECT_GT(last, killed_at - 10 * kFlushMs * 1'000'000) << "signal " << sig;
    EXPECT_LT(last, killed_at);
  }
}

TEST(Fault, AReaderWhileTheTraceIsWrittenSeesAGrowingPrefix) {
  loupe::test::TempDir dir;
  std::string path = dir.file("live.db");
  pid_t pid = spawn_recorder(path, 50);
  size_t last = 0;
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    TraceModel m;
    ASSERT_NO_THROW(m = load_trace(path)) << "read " << i;
    EXPECT_EQ(m.info.status, "recording");
    std::vector<double> seq = sequence(m);
    EXPECT_TRUE(is_prefix(seq)) << "read " << i;
    EXPECT_GE(seq.size(), last);
    last = seq.size();
  }
  EXPECT_GT(last, 0u);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// The instants' names of a trace, in time order.
std::vector<std::string> instant_names(const std::string& path) {
  TraceModel m = load_trace(path);
  std::vector<std::pair<int64_t, std::string>> named;
  for (const Instants& t : m.instants) {
    for (size_t i = 0; i < t.size(); ++i) named.emplace_back(t.time[i], m.str(t.name[i]));
  }
  std::sort(named.begin(), named.end());
  std::vector<std::string> names;
  for (auto& [time, name] : named) names.push_back(name);
  return names;
}

// A program that forks under a capture (a DataLoader worker, a process
// pool): the child records nothing, stopping and destroying the capture it
// inherited returns at once and leaves it to the parent (destroying it
// waited forever on a condition variable the parent's writer thread was
// waiting on), and the child may start a capture of its own.
TEST(Fault, AForkedChildLeavesTheCaptureToItsParent) {
  loupe::test::TempDir dir;
  std::string parent = dir.file("parent.db"), child = dir.file("child.db");
  auto capture = std::make_unique<Capture>(CaptureOptions{.path = parent});
  instant("parent before fork");
  // As in a real program, the capture's threads are waiting when it forks:
  // a condition variable with a waiter the child does not have can never be
  // destroyed there.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pid_t pid = fork();
  if (pid == 0) {
    bool recording = capturing();
    instant("child inherited");
    capture->stop();
    capture.reset();
#ifndef __SANITIZE_THREAD__  // ThreadSanitizer refuses threads started after a fork
    Capture own({.path = child});
    instant("child's own");
    own.stop();
#endif
    _exit(recording ? 3 : 0);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL() << "the child hung stopping the capture it inherited";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child was not recording: status " << status;
  instant("parent after fork");
  capture.reset();
  EXPECT_EQ(instant_names(parent), (std::vector<std::string>{"parent before fork", "parent after fork"}));
#ifndef __SANITIZE_THREAD__
  EXPECT_EQ(instant_names(child), (std::vector<std::string>{"child's own"}));
#endif
}

TEST(Fault, SixtyFourThreadsWithSmallBuffersCountEveryEvent) {
  loupe::test::TempDir dir;
  constexpr int kThreads = 64, kPerThread = 20'000;
  CaptureStats stats = loupe::test::capture_threads(dir.file("t.db"), 256, kThreads, [](int) {
    for (int i = 0; i < kPerThread; ++i) {
      instant("tick");
      if (i % 1000 == 0) std::this_thread::yield();
    }
  });
  TraceModel m = load_trace(dir.file("t.db"));
  EXPECT_EQ(m.total_events(), stats.recorded);
  EXPECT_EQ(stats.recorded + stats.dropped, uint64_t(kThreads) * kPerThread);
  EXPECT_EQ(stats.lost, 0u);
  uint64_t per_thread = 0;
  for (const Thread& t : m.threads) per_thread += t.dropped_events;
  EXPECT_EQ(per_thread, stats.dropped);
}

}  // namespace
