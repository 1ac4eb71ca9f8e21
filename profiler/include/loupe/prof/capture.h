// A capture records every event of the process into one trace file.
//
//   loupe::prof::Capture capture({.path = "trace.db"});
//   ... run the program ...
//   capture.stop();   // or let it go out of scope
//
// A background thread drains the threads' rings and writes batched
// transactions; every flush interval the file holds everything recorded so
// far, so a process that dies mid-run leaves a readable trace. A capture
// never throws at or disturbs the observed program: when the file cannot be
// created or written, it says so once on stderr, keeps counting what is
// lost, and the program runs on.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace loupe::prof {

struct CaptureOptions {
  std::string path = "trace.db";
  // The most time between an event and its commit to the file.
  std::chrono::milliseconds flush_interval{250};
  // Ring capacity per thread in events (64 bytes each); rounded up to a
  // power of two. Applies to threads that record for the first time.
  uint32_t buffer_events = 1u << 15;
  // What the trace names as its producer, and the command line it records.
  std::string producer = "loupe";
  std::string command_line;
};

struct CaptureStats {
  uint64_t recorded = 0;  // events written to the file
  uint64_t dropped = 0;   // events lost because a ring was full
  uint64_t lost = 0;      // events lost because the file could not be written
  uint64_t commits = 0;
  uint64_t drains = 0;  // times the drainer woke and emptied the rings
  std::string error;    // the first write error, empty if none
};

// Hooks for collectors that record outside the rings (the runtime's CUPTI
// collector): `on_capture_start` hooks run once a capture records, at the
// end of its constructor; `on_capture_stop` hooks at the start of its
// stop(), while it still takes events, so that what a collector holds
// (CUPTI's buffers) reaches the file. Hooks stay registered for the life of
// the process; one with nothing to do must return at once.
void on_capture_start(void (*hook)());
void on_capture_stop(void (*hook)());

class Capture {
 public:
  explicit Capture(CaptureOptions options);
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  // True when the trace file was created and recording is on.
  bool ok() const;
  // Drains everything recorded, commits, and closes the file. Idempotent.
  void stop();
  // Figures so far (final after stop()).
  CaptureStats stats() const;
  const std::string& path() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace loupe::prof
