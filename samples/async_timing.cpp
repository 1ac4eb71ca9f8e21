// Async timing: a host clock around an asynchronous call measures the time
// to queue the work, not the time to do it.
//
// A jitted call returns as soon as its kernels are queued; the device runs
// them afterwards. A stopwatch read right after the call stops long before
// the device is done, and the step looks many times faster than it is.
//
//   mistake: the stopwatch stops right after the call returns. `loupe
//            analyze` reports an `async-timing` finding: the timed range
//            ends before the device work it launched, at the line that
//            opens it.
//   fixed:   the device is waited for before the stopwatch stops, so it
//            measures the step. Waiting for the loss alone would not do:
//            the loss is ready before the optimizer's update kernels have
//            run (block_until_ready on every result, or synchronize).
//
//   async_timing --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <source_location>

#include "loupe/prof/record.h"
#include "mlp.h"
#include "sample.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using loupe::samples::TrainState;
using rt::Array;

namespace {

// A stopwatch as benchmark loops write them. It also declares the interval
// it measures as a timing in the trace (a range of kind `timing`, with the
// line that started it), so loupe can compare what it timed with what the
// device did.
class Stopwatch {
 public:
  explicit Stopwatch(std::vector<double>& laps, std::source_location where = std::source_location::current())
      : laps_(laps), range_("timed step", prof::SpanKind::timing, prof::callsite(where)) {}
  ~Stopwatch() { laps_.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start_).count()); }

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<double>& laps_;
  prof::Scope range_;
  Clock::time_point start_ = Clock::now();
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  loupe::samples::SampleArgs args(argc, argv, "async_timing", {});
  loupe::samples::Recording recording(args, "async_timing");
  const int steps = args.steps(args.ci() ? 30 : 200);
  const int64_t batch = 128, features = 256, hidden = args.ci() ? 512 : 1024, classes = 10;

  auto [x, y] = loupe::samples::synthetic_batch(batch, features, classes);

  auto params = loupe::samples::mlp_init({features, hidden, hidden, classes}, 7);
  TrainState state{params, rt::adamw_init(params)};
  auto step = rt::jit("train_step", [](TrainState s, Array inputs, Array labels) {
    return loupe::samples::train_step(s, inputs, labels);
  });
  step.compile_for(state, x, y);  // compile before timing anything

  std::printf("async_timing (%s): %d steps, MLP %lld-%lld-%lld-%lld, batch %lld\n", args.variant().c_str(), steps,
              (long long)features, (long long)hidden, (long long)hidden, (long long)classes, (long long)batch);
  std::vector<double> laps;
  auto start = std::chrono::steady_clock::now();
  Array loss;
  for (int i = 0; i < steps; ++i) {
    prof::StepScope step_scope(i);
    Stopwatch timer(laps);  // MISTAKE: stops when the call returns, before the device is done
    std::tie(state, loss) = step(state, x, y);
    if (args.fixed()) rt::synchronize(rt::default_device());  // FIX: wait for the whole step before it stops
  }
  rt::synchronize(rt::default_device());
  double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("stopwatch: median step %.3f ms\n", median(laps));
  std::printf("wall clock: %d steps in %.1f ms, %.3f ms per step\n", steps, total, total / steps);
  return 0;
}
