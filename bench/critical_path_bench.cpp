// Loads a trace, then times its critical path (the Context the analyses
// share, the dependency graph, the walk) and its what-if replay with no
// change (the Context, the graph again, the replay): the best of three
// runs of each, in one JSON line.
//   critical_path_bench TRACE
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "loupe/prof/analysis.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/prof/whatif.h"

namespace {

template <typename F>
double best_of_three(F&& f) {
  double best = 1e30;
  for (int run = 0; run < 3; ++run) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: critical_path_bench TRACE\n");
    return 2;
  }
  loupe::prof::TraceModel m = loupe::prof::load_trace(argv[1]);
  size_t segments = 0;
  double path = best_of_three([&] { segments = loupe::prof::critical_path(m).segments.size(); });
  int64_t predicted = 0;
  double replay = best_of_three([&] { predicted = loupe::prof::what_if(m, {}).predicted_ns; });
  fmt::print(
      "{{\"events\": {}, \"seconds\": {:.3f}, \"segments\": {}, \"replay_seconds\": {:.3f}, "
      "\"replayed_ns\": {}, \"measured_ns\": {}}}\n",
      m.total_events(), path, segments, replay, predicted, m.end_ns - m.start_ns);
  return 0;
}
