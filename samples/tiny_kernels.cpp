// Tiny kernels: an optimizer written as element-wise ops and run eagerly
// launches one small kernel per op, and the program becomes launch-bound.
//
// Outside jit, every op is dispatched on its own: the host looks it up,
// allocates its output and queues one kernel, which on a small array runs
// for less time than it took to launch. An Adam update is about fourteen
// such ops per parameter. Inside jit, the same ops become a graph that the
// compiler fuses into one kernel per parameter.
//
//   mistake: the gradients come from a jitted function, but the update is
//            applied eagerly, op by op. `loupe analyze` reports a
//            `tiny-kernels` finding: most kernels shorter than their launch,
//            launched eagerly, at the lines of the update.
//   fixed:   the whole step (gradients and update) is one jitted function.
//
//   tiny_kernels --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db] [--layers N] [--width N]
#include <cstdio>
#include <random>

#include "loupe/prof/record.h"
#include "mlp.h"
#include "sample.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using rt::Array;

namespace {

// Parameters and Adam's two moments for each of them.
struct State {
  std::vector<Array> params, m, v;
  auto tree_fields() { return std::tie(params, m, v); }
};

Array loss_fn(std::vector<Array> params, Array inputs, Array targets) {
  Array err = loupe::samples::mlp_forward(params, inputs) - targets;
  return rt::mean(err * err);
}

// Adam with decoupled weight decay for one parameter, written out op by op.
// MISTAKE when called outside jit: every op on the lines below is a kernel.
void adam(Array& p, const Array& g, Array& m, Array& v) {
  m = 0.9 * m + 0.1 * g;
  v = 0.999 * v + 0.001 * (g * g);
  p = p - 1e-3 * (m / (rt::sqrt(v) + 1e-8) + 1e-4 * p);
}

}  // namespace

int main(int argc, char** argv) {
  loupe::samples::SampleArgs args(argc, argv, "tiny_kernels", {{"--layers", "16"}, {"--width", "16"}});
  loupe::samples::Recording recording(args, "tiny_kernels");
  const int steps = args.steps(args.ci() ? 30 : 60);
  const int64_t layers = args.number("--layers"), width = args.number("--width"), batch = 32;

  // A deep, narrow MLP: many small parameters.
  std::vector<int64_t> sizes(size_t(layers + 1), width);
  State state{loupe::samples::mlp_init(sizes, 7), {}, {}};
  for (const Array& p : state.params) {
    state.m.push_back(rt::zeros_like(p));
    state.v.push_back(rt::zeros_like(p));
  }
  std::mt19937 gen(1);
  std::normal_distribution<float> normal;
  std::vector<float> host_x(size_t(batch * width)), host_t(size_t(batch * width));
  for (float& f : host_x) f = normal(gen);
  for (size_t i = 0; i < host_t.size(); ++i) host_t[i] = std::tanh(host_x[i]);
  Array x = rt::array(host_x, {batch, width}), target = rt::array(host_t, {batch, width});

  // The mistake's step: gradients in jit, the update outside it.
  auto grads = rt::jit("grads", [](std::vector<Array> params, Array inputs, Array targets) {
    return rt::value_and_grad(loss_fn)(params, inputs, targets);
  });
  // The fix: one jitted step, gradients and update together.
  auto train_step = rt::jit("train_step", [](State s, Array inputs, Array targets) {
    auto [loss, g] = rt::value_and_grad(loss_fn)(s.params, inputs, targets);
    for (size_t k = 0; k < s.params.size(); ++k) adam(s.params[k], g[k], s.m[k], s.v[k]);
    return std::make_pair(s, loss);
  });

  std::printf("tiny_kernels (%s): %d steps, %lld layers of %lldx%lld (%zu parameters)\n", args.variant().c_str(), steps,
              (long long)layers, (long long)width, (long long)width, state.params.size());
  loupe::samples::LoopClock clock;
  Array loss;
  for (int i = 0; i < steps; ++i) {
    prof::StepScope step_scope(i);
    if (args.fixed()) {
      std::tie(state, loss) = train_step(state, x, target);  // FIX: the update fuses inside the jitted step
    } else {
      std::vector<Array> g;
      std::tie(loss, g) = grads(state.params, x, target);
      for (size_t k = 0; k < state.params.size(); ++k) {
        adam(state.params[k], g[k], state.m[k], state.v[k]);  // MISTAKE: eager, a kernel per op
      }
    }
  }
  clock.report(steps);
  std::printf("final loss %.5f\n", loss.item<float>());
  return 0;
}
