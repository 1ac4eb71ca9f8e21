// The record API's hot path: nanoseconds per event with a capture active
// (its writer draining the rings into SQLite on a background thread), and
// with none.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "loupe/prof/capture.h"
#include "loupe/prof/record.h"

namespace prof = loupe::prof;

namespace {

std::unique_ptr<prof::Capture> g_capture;
std::string g_path;

// One capture for a whole benchmark (all its threads), started by thread 0.
void start_capture(const benchmark::State& state) {
  if (state.thread_index() != 0) return;
  g_path = "/tmp/loupe-record-bench-" + std::to_string(::getpid()) + ".db";
  g_capture = std::make_unique<prof::Capture>(prof::CaptureOptions{.path = g_path, .buffer_events = 1u << 16});
}

void stop_capture(benchmark::State& state) {
  if (state.thread_index() != 0) return;
  g_capture->stop();
  prof::CaptureStats s = g_capture->stats();
  state.counters["dropped_pct"] = 100.0 * double(s.dropped) / double(s.dropped + s.recorded + 1);
  g_capture.reset();
  ::unlink(g_path.c_str());
}

// Events are recorded in bursts of 256, timed on the recording thread, with
// a pause between bursts that is not timed: the writer keeps up, as it does
// for a real program, and the figure is the cost the program pays.
constexpr int kBurst = 256;
constexpr auto kPause = std::chrono::microseconds(500);

// Reports the median over bursts of the cost per event (`ns_per_event`), as
// well as Google Benchmark's mean time per burst.
template <typename Record>
void run_bursts(benchmark::State& state, Record record) {
  start_capture(state);
  std::vector<double> per_event;
  per_event.reserve(size_t(state.max_iterations));
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) record(i);
    auto t1 = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(secs);
    per_event.push_back(secs * 1e9 / kBurst);
    std::this_thread::sleep_for(kPause);
  }
  std::nth_element(per_event.begin(), per_event.begin() + long(per_event.size() / 2), per_event.end());
  state.counters["ns_per_event"] = benchmark::Counter(per_event[per_event.size() / 2], benchmark::Counter::kAvgThreads);
  state.SetItemsProcessed(state.iterations() * kBurst);
  stop_capture(state);
}

void BM_Span(benchmark::State& state) {
  run_bursts(state, [](int) { prof::Scope s("bench span"); });
}

void BM_Counter(benchmark::State& state) {
  run_bursts(state, [](int i) { prof::counter("bench counter", double(i)); });
}

void BM_DeviceOp(benchmark::State& state) {
  run_bursts(state, [](int) {
    prof::Ticks t = prof::ticks_now();
    prof::device_op({.device = 0, .stream = 1, .name = "bench kernel", .start = t, .end = t + 100, .correlation = 7});
  });
}

void BM_SpanNoCapture(benchmark::State& state) {
  for (auto _ : state) {
    for (int i = 0; i < kBurst; ++i) {
      prof::Scope s("bench span");
    }
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
}

// A Scope is one event that reads the clock twice (at its begin and end).
#define LOUPE_BURST_BENCH(fn) \
  BENCHMARK(fn)->Threads(1)->Threads(2)->UseManualTime()->Iterations(2000)->Repetitions(5)->ReportAggregatesOnly()
LOUPE_BURST_BENCH(BM_Span);
LOUPE_BURST_BENCH(BM_Counter);
LOUPE_BURST_BENCH(BM_DeviceOp);
BENCHMARK(BM_SpanNoCapture)->Repetitions(5)->ReportAggregatesOnly();

}  // namespace

BENCHMARK_MAIN();
