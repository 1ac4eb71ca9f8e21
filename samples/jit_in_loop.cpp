// Jit in a loop: a jitted function created anew every iteration compiles
// every iteration.
//
// A jitted function keeps its compiled executables in its own cache, which
// lives as long as the object does. Creating the object inside the loop
// (the C++ form of `jax.jit(f)(x)` in a Python loop) throws the cache away
// each time: every step traces and compiles the same function again, with
// the same input shapes.
//
//   mistake: `rt::jit(...)(args)` inside the loop. `loupe analyze` reports
//            a `recompile` finding whose reason is "new function object",
//            at the line that creates and calls it.
//   fixed:   the jitted step is created once, before the loop; it compiles
//            on the first call and every later call is a cache hit.
//
//   jit_in_loop --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db]
#include <cstdio>

#include "loupe/prof/record.h"
#include "mlp.h"
#include "sample.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using loupe::samples::TrainState;
using rt::Array;

namespace {

std::pair<TrainState, Array> train_step(TrainState s, Array x, Array y) {
  return loupe::samples::train_step(s, x, y, {.lr = 1e-3});
}

}  // namespace

int main(int argc, char** argv) {
  loupe::samples::SampleArgs args(argc, argv, "jit_in_loop", {});
  loupe::samples::Recording recording(args, "jit_in_loop");
  const int steps = args.steps(args.ci() ? 30 : 200);
  const int64_t batch = 16, features = 32, hidden = 64, classes = 10;

  auto [x, y] = loupe::samples::synthetic_batch(batch, features, classes);

  auto params = loupe::samples::mlp_init({features, hidden, hidden, classes}, 7);
  TrainState state{params, rt::adamw_init(params)};
  const rt::JitOptions names{.arg_names = {"state", "x", "y"}};
  auto step = rt::jit("train_step", train_step, names);  // FIX: create the jitted function once

  std::printf("jit_in_loop (%s): %d steps, MLP %lld-%lld-%lld-%lld, batch %lld\n", args.variant().c_str(), steps,
              (long long)features, (long long)hidden, (long long)hidden, (long long)classes, (long long)batch);
  loupe::samples::LoopClock clock;
  Array loss;
  for (int i = 0; i < steps; ++i) {
    prof::StepScope step_scope(i);
    if (args.fixed()) {
      std::tie(state, loss) = step(state, x, y);
    } else {
      std::tie(state, loss) = rt::jit("train_step", train_step, names)(state, x, y);  // MISTAKE: a new jit each step
    }
  }
  clock.report(steps);
  std::printf("final loss %.4f\n", loss.item<float>());
  return 0;
}
