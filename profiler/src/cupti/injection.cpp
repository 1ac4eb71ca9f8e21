// libloupe_inject.so: records an unmodified CUDA program. The CUDA driver
// loads it when CUDA_INJECTION64_PATH names it and calls
// InitializeInjection() from cuInit; `loupe capture` sets that up.
//
//   LOUPE_TRACE             the trace file to write (default loupe-capture.db)
//   LOUPE_CAPTURE_DURATION  stop recording after this many seconds
//
// Everything is stopped, flushed and written at exit. Nothing here may
// take the program down: failures are said once on stderr and recording
// stops.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loupe/prof/capture.h"
#include "loupe/prof/cupti.h"

namespace {

using namespace loupe::prof;

std::mutex g_mu;
std::unique_ptr<Capture> g_capture;
std::unique_ptr<CuptiCollector> g_collector;
std::unique_ptr<std::thread> g_timer;
std::condition_variable g_timer_wake;
bool g_stopped = false;
pid_t g_owner = 0;  // the process recording: a forked child inherits this state, not the recording

std::string command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()), out;
  for (char c : all) out += c == '\0' ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Flush CUPTI, then write and close the trace. Idempotent.
void stop_recording() {
  std::lock_guard lock(g_mu);
  if (g_stopped) return;
  g_stopped = true;
  g_collector.reset();
  if (g_capture) g_capture->stop();
  g_timer_wake.notify_all();
}

void at_exit() {
  if (::getpid() != g_owner) {
    // A forked child (a DataLoader worker): the capture, collector and
    // timer are the parent's, and no thread of theirs runs here. The
    // capture and collector stand down when destroyed; the timer's thread
    // is kept as it is (a joinable std::thread may not be destroyed).
    [[maybe_unused]] static std::thread* volatile inherited = nullptr;  // volatile: the store is kept
    inherited = g_timer.release();
    return;
  }
  stop_recording();
  if (g_timer && g_timer->joinable()) g_timer->join();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  std::lock_guard lock(g_mu);
  if (g_capture) return 1;
  g_owner = ::getpid();
  const char* path = std::getenv("LOUPE_TRACE");
  g_capture = std::make_unique<Capture>(CaptureOptions{
      .path = path && *path ? path : "loupe-capture.db", .producer = "loupe capture", .command_line = command_line()});
  if (!g_capture->ok()) return 1;  // it said why; the program runs on
  std::string why;
  g_collector = CuptiCollector::start({}, &why);
  if (!g_collector) std::fprintf(stderr, "loupe: %s; the trace holds no GPU activity\n", why.c_str());
  if (const char* d = std::getenv("LOUPE_CAPTURE_DURATION")) {
    double seconds = std::atof(d);
    if (seconds > 0) {
      g_timer = std::make_unique<std::thread>([seconds] {
        std::unique_lock timer_lock(g_mu);
        if (!g_timer_wake.wait_for(timer_lock, std::chrono::duration<double>(seconds), [] { return g_stopped; })) {
          timer_lock.unlock();
          stop_recording();
        }
      });
    }
  }
  std::atexit(at_exit);
  return 1;
}
