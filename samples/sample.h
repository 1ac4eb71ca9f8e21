// What every pitfall sample shares: its command line and its recording.
//
//   NAME --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db] [options of the sample]
//
// --variant picks the program with the mistake or the one with its fix;
// --size ci shrinks it to run in a second or two (the tests use it);
// --out records the run into a trace file (as `loupe record -o FILE --`
// or LOUPE_TRACE=FILE would), for `loupe analyze` and `loupe-view`.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loupe/prof/capture.h"
#include "loupe/rt/runtime.h"

namespace loupe::samples {

class SampleArgs {
 public:
  // `options` are the sample's own flags with their defaults, as text.
  SampleArgs(int argc, char** argv, const char* name, std::map<std::string, std::string> options)
      : name_(name), values_(std::move(options)) {
    values_.emplace("--variant", "mistake");
    values_.emplace("--steps", "");
    values_.emplace("--size", "full");
    values_.emplace("--out", "");
    for (int i = 1; i < argc; i += 2) {
      auto it = values_.find(argv[i]);
      if (it == values_.end() || i + 1 >= argc) usage();
      it->second = argv[i + 1];
    }
    if (variant() != "mistake" && variant() != "fixed") usage();
    if (size() != "ci" && size() != "full") usage();
  }

  const std::string& variant() const { return values_.at("--variant"); }
  bool fixed() const { return variant() == "fixed"; }
  const std::string& size() const { return values_.at("--size"); }
  bool ci() const { return size() == "ci"; }
  const std::string& text(const std::string& flag) const { return values_.at(flag); }
  // A positive number; `fallback` when the flag was left empty.
  long number(const std::string& flag, long fallback = 0) const {
    const std::string& v = values_.at(flag);
    if (v.empty()) return fallback;
    char* end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    if (*end != 0 || n <= 0) {
      std::fprintf(stderr, "%s: %s needs a positive number, not '%s'\n", name_, flag.c_str(), v.c_str());
      std::exit(2);
    }
    return n;
  }
  int steps(int fallback) const { return int(number("--steps", fallback)); }

 private:
  [[noreturn]] void usage() const {
    std::fprintf(stderr, "usage: %s --variant mistake|fixed [--steps N] [--size ci|full] [--out FILE]", name_);
    for (const auto& [flag, value] : values_) {
      if (flag != "--variant" && flag != "--steps" && flag != "--size" && flag != "--out")
        std::fprintf(stderr, " [%s %s]", flag.c_str(), value.empty() ? "N" : value.c_str());
    }
    std::fprintf(stderr, "\n");
    std::exit(2);
  }

  const char* name_;
  std::map<std::string, std::string> values_;
};

// The wall time of a loop, read once the device has finished the work the
// loop queued (the host alone would stop early: see async_timing.cpp).
class LoopClock {
 public:
  void report(int steps) const {
    rt::synchronize(rt::default_device());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    std::printf("%d steps in %.1f ms: %.3f ms per step\n", steps, ms, ms / steps);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Records the program into --out while it lives. It waits for the device
// before it closes the file, so the trace holds the work still queued.
class Recording {
 public:
  Recording(const SampleArgs& args, const char* producer) {
    // Rings of 256 Ki events per thread (16 MiB): eager ops record several
    // events each, millions a second, and on a busy machine the capture's
    // drainer may not run for tens of milliseconds.
    if (!args.text("--out").empty()) {
      capture_ = std::make_unique<prof::Capture>(
          prof::CaptureOptions{.path = args.text("--out"), .buffer_events = 1u << 18, .producer = producer});
    }
  }
  ~Recording() {
    rt::synchronize(rt::default_device());
    if (capture_) capture_->stop();
  }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

 private:
  std::unique_ptr<prof::Capture> capture_;
};

}  // namespace loupe::samples
