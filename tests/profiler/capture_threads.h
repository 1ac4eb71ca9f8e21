// Many threads recording at once: how the tests load the per-thread rings
// and the drainer together.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "loupe/prof/capture.h"

namespace loupe::test {

// Runs body(0) ... body(threads - 1), each on a thread of its own, and
// waits for them all.
inline void on_threads(int threads, const std::function<void(int)>& body) {
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) running.emplace_back(body, t);
  for (auto& th : running) th.join();
}

// Captures into `path`, with rings of `buffer_events` events, while
// `threads` threads run `body` (given each its number); the capture's stats
// once it has stopped.
inline prof::CaptureStats capture_threads(const std::string& path, uint32_t buffer_events, int threads,
                                          const std::function<void(int)>& body) {
  prof::Capture capture({.path = path, .buffer_events = buffer_events});
  on_threads(threads, body);
  capture.stop();
  return capture.stats();
}

}  // namespace loupe::test
