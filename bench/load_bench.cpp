// Loads a trace into a TraceModel and reports the time, the model's size
// and the process's peak memory growth over the load, in one JSON line.
// Run it as its own process so that the peak belongs to the load alone:
//   load_bench TRACE [THREADS]
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "loupe/prof/trace_reader.h"
#include "proc_status.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: load_bench TRACE [THREADS]\n");
    return 2;
  }
  unsigned threads = argc > 2 ? unsigned(std::atoi(argv[2])) : 0;
  int64_t rss_before = proc_status_bytes("VmRSS:");
  auto t0 = std::chrono::steady_clock::now();
  loupe::prof::TraceModel m = loupe::prof::load_trace(argv[1], {.threads = threads});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t peak = proc_status_bytes("VmHWM:") - rss_before;
  uint64_t model = m.memory_bytes();
  fmt::print(
      "{{\"events\": {}, \"seconds\": {:.3f}, \"events_per_second\": {:.0f}, \"model_bytes\": {}, "
      "\"peak_growth_bytes\": {}, \"peak_over_model\": {:.3f}}}\n",
      m.total_events(), secs, double(m.total_events()) / secs, model, peak, double(peak) / double(model));
  return 0;
}
