// Loads a trace, then times its critical path (the Context the analyses
// share, the dependency graph, the walk): the best of three runs, in one
// JSON line.
//   critical_path_bench TRACE
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "loupe/prof/analysis.h"
#include "loupe/prof/trace_reader.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: critical_path_bench TRACE\n");
    return 2;
  }
  loupe::prof::TraceModel m = loupe::prof::load_trace(argv[1]);
  double best = 1e30;
  size_t segments = 0;
  for (int run = 0; run < 3; ++run) {
    auto t0 = std::chrono::steady_clock::now();
    loupe::prof::CriticalPath p = loupe::prof::critical_path(m);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    segments = p.segments.size();
  }
  fmt::print("{{\"events\": {}, \"seconds\": {:.3f}, \"segments\": {}}}\n", m.total_events(), best, segments);
  return 0;
}
