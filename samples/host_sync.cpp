// Host sync: reading a value back every step stalls the pipeline.
//
// Ops and jitted calls return before the device has run them, so the host
// normally queues step i+1 while the device still computes step i. Reading
// a value on the host (item(), to_host(), printing it) waits for the device
// to finish everything queued before it: the device then runs dry while the
// host queues the next step.
//
//   mistake: the loss is read with item() every step, for a running average
//            in the log. `loupe analyze` reports a `transfer` finding, a
//            synchronous device-to-host read at that line every step, with
//            the device idle time it caused.
//   fixed:   the running sum stays on the device (the jitted step adds the
//            loss to it) and is read every --log-every steps.
//
// --batch sets the rows a step trains on: runs with a few percent more rows
// than others are a planted slowdown, with which `loupe diff`'s tests
// check that it tells a small slowdown from noise.
//
//   host_sync --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db] [--log-every N] [--hidden N]
//             [--batch N]
#include <cstdio>
#include <random>

#include "loupe/prof/record.h"
#include "mlp.h"
#include "sample.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using loupe::samples::TrainState;
using rt::Array;

int main(int argc, char** argv) {
  loupe::samples::SampleArgs args(argc, argv, "host_sync",
                                  {{"--log-every", "20"}, {"--hidden", "64"}, {"--batch", "32"}});
  loupe::samples::Recording recording(args, "host_sync");
  const int steps = args.steps(args.ci() ? 40 : 300);
  const int log_every = int(args.number("--log-every"));
  const int64_t batch = args.number("--batch"), features = 64, hidden = args.number("--hidden"), classes = 10;
  const int64_t batches = 8;

  // A small synthetic dataset, uploaded once: the device keeps it.
  std::mt19937 gen(1);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> label(0, int32_t(classes) - 1);
  std::vector<Array> xs, ys;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<float> x(size_t(batch * features));
    std::vector<int32_t> y(static_cast<size_t>(batch));
    for (float& v : x) v = normal(gen);
    for (int32_t& v : y) v = label(gen);
    xs.push_back(rt::array(x, {batch, features}));
    ys.push_back(rt::array(y, {batch}));
  }

  auto params = loupe::samples::mlp_init({features, hidden, hidden, classes}, 7);
  TrainState state{params, rt::adamw_init(params)};
  // One step: the update, and the loss added to a running sum on the device.
  auto step = rt::jit("train_step",
                      [](TrainState s, Array x, Array y, Array loss_sum) {
                        auto [next, loss] = loupe::samples::train_step(s, x, y, {.lr = 1e-3});
                        return std::make_tuple(next, loss, loss_sum + loss);
                      },
                      {.arg_names = {"state", "x", "y", "loss_sum"}});

  std::printf("host_sync (%s): %d steps, MLP %lld-%lld-%lld-%lld, batch %lld\n", args.variant().c_str(), steps,
              (long long)features, (long long)hidden, (long long)hidden, (long long)classes, (long long)batch);
  loupe::samples::LoopClock clock;
  Array loss_sum = rt::zeros({});
  double host_sum = 0;
  int since_log = 0;
  for (int i = 0; i < steps; ++i) {
    prof::StepScope step_scope(i);
    auto [next, loss, sum] = step(state, xs[size_t(i) % xs.size()], ys[size_t(i) % ys.size()], loss_sum);
    state = next;
    ++since_log;
    if (args.fixed()) {
      loss_sum = sum;  // FIX: the running sum stays on the device...
    } else {
      host_sum += loss.item<float>();  // MISTAKE: a synchronous read every step
    }
    if (since_log == log_every || i == steps - 1) {
      // ...and is read only here, every log_every steps.
      double mean = args.fixed() ? loss_sum.item<float>() / since_log : host_sum / since_log;
      std::printf("step %4d  mean loss %.4f\n", i + 1, mean);
      loss_sum = rt::zeros({});
      host_sum = 0;
      since_log = 0;
    }
  }
  clock.report(steps);
  return 0;
}
