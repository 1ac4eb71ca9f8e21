// Records a numbered sequence of events until it is killed.
//   crash_child TRACE FLUSH_MS
// Prints "ready" once the capture has started.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "loupe/prof/capture.h"
#include "loupe/prof/record.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: crash_child TRACE FLUSH_MS\n");
    return 2;
  }
  loupe::prof::Capture capture({.path = argv[1], .flush_interval = std::chrono::milliseconds(std::atoi(argv[2]))});
  if (!capture.ok()) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  for (uint64_t i = 0;; ++i) {
    loupe::prof::counter("seq", double(i));
    if (i % 16 == 0) {
      loupe::prof::Scope s("batch");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}
