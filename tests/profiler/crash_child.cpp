// A program that records numbered events, for the crash and fault tests.
//   crash_child TRACE FLUSH_MS                  until killed
//   crash_child TRACE FLUSH_MS EVENTS [FSIZE]   EVENTS events, then a clean stop;
//                                               FSIZE limits file sizes (a full disk)
// Prints "ready" once recording, and at a clean stop
// "recorded R dropped D lost L". With LOUPE_CRASH_PROGRESS set it also
// prints "progress SEQ MONOTONIC_NS" every 4096 events, so that a killer
// knows what had been emitted when.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "loupe/prof/capture.h"
#include "loupe/prof/clock.h"
#include "loupe/prof/record.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: crash_child TRACE FLUSH_MS [EVENTS [FSIZE]]\n");
    return 2;
  }
  long long events = argc > 3 ? std::atoll(argv[3]) : -1;
  if (argc > 4) {
    rlimit limit{rlim_t(std::atoll(argv[4])), rlim_t(std::atoll(argv[4]))};
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  loupe::prof::Capture capture({.path = argv[1], .flush_interval = std::chrono::milliseconds(std::atoi(argv[2]))});
  if (!capture.ok()) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  const bool progress = std::getenv("LOUPE_CRASH_PROGRESS") != nullptr;
  for (long long i = 0; events < 0 || i < events; ++i) {
    loupe::prof::counter("seq", double(i));
    if (progress && i % 4096 == 0) {
      std::printf("progress %lld %lld\n", i, (long long)loupe::prof::monotonic_ns());
      std::fflush(stdout);
    }
    if (i % 16 == 0) {
      loupe::prof::Scope s("batch");
      std::this_thread::sleep_for(std::chrono::microseconds(events < 0 ? 100 : 2));
    }
  }
  capture.stop();
  auto st = capture.stats();
  std::printf("recorded %llu dropped %llu lost %llu\n", (unsigned long long)st.recorded, (unsigned long long)st.dropped,
              (unsigned long long)st.lost);
  return 0;
}
