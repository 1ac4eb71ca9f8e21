// Fusion and the other passes change how a function runs, never what it
// computes: fused, unfused and eager results agree, on hand-written
// patterns and on randomly generated programs.
#include <gtest/gtest.h>

#include <random>

#include "mlp.h"
#include "runtime_test_util.h"

namespace loupe::test {
namespace {

using V = std::vector<Array>;

struct Runs {
  std::vector<Array> eager, fused, unfused, unoptimized;
  uint32_t fused_kernels = 0, unfused_kernels = 0;
};

Runs run_all(const std::function<V(const V&)>& f, const V& x) {
  Runs r;
  r.eager = f(x);
  auto fused = rt::jit("fused", f);
  auto unfused = rt::jit("unfused", f, {.fuse = false});
  auto raw = rt::jit("unoptimized", f, {.optimize = false, .fuse = false});
  r.fused = fused(x);
  r.unfused = unfused(x);
  r.unoptimized = raw(x);
  r.fused_kernels = fused.stats().last_kernels;
  r.unfused_kernels = unfused.stats().last_kernels;
  return r;
}

void expect_agree(const Runs& r, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(r.eager.size(), r.fused.size());
  for (size_t i = 0; i < r.eager.size(); ++i) {
    Ref want = to_ref(r.eager[i]);
    EXPECT_TRUE(close(r.fused[i], want, rtol, atol)) << "fused output " << i;
    EXPECT_TRUE(close(r.unfused[i], want, rtol, atol)) << "unfused output " << i;
    EXPECT_TRUE(close(r.unoptimized[i], want, rtol, atol)) << "unoptimized output " << i;
  }
}

TEST(Fusion, ElementwiseChainIsOneKernel) {
  V x{to_array(random_ref({64, 32}, 1)), to_array(random_ref({32}, 2))};
  Runs r = run_all([](const V& v) { return V{rt::tanh(rt::relu(v[0] * 2.0 + v[1]) - 0.5) * v[0]}; }, x);
  expect_agree(r);
  EXPECT_EQ(r.fused_kernels, 1u);
  EXPECT_GT(r.unfused_kernels, 4u);
}

TEST(Fusion, ReductionsConsumeTheirProducers) {
  V x{to_array(random_ref({16, 40}, 3, -3, 3))};
  Runs r = run_all([](const V& v) { return V{rt::softmax(v[0]), rt::sum(rt::exp(v[0]) * 2.0, {0})}; }, x);
  expect_agree(r);
  // max; exp and sum; divide — and the column sum fused with its exp.
  EXPECT_LE(r.fused_kernels, 4u);
  Runs ln = run_all(
      [](const V& v) {
        return V{rt::layer_norm(v[0], rt::ones({40}), rt::zeros({40})), rt::argmax(v[0] * v[0], 1)};
      },
      x);
  expect_agree(ln, 1e-4, 1e-5);
}

TEST(Fusion, ViewsBecomeStridedLoads) {
  V x{to_array(random_ref({8, 12}, 4)), to_array(random_ref({12, 8}, 5))};
  Runs r = run_all(
      [](const V& v) {
        Array t = rt::transpose(v[1]) + v[0];                           // transposed load
        Array s = rt::slice(v[0], {1, 0}, {7, 12}, {2, 3}) * 3.0;       // strided slice
        Array b = rt::broadcast_to(rt::sum(v[0], {1}, true), {8, 12});  // broadcast of a reduction
        return V{t, s, b - v[0], rt::reshape(t, {96}) * 2.0};
      },
      x);
  expect_agree(r);
}

TEST(Fusion, MlpTrainingStepAgrees) {
  using namespace loupe::samples;
  auto params = mlp_init({12, 16, 5}, 3);
  TrainState s{params, rt::adamw_init(params)};
  Array xb = rt::random::normal(rt::random::key(4), {8, 12});
  Array yb = rt::random::randint(rt::random::key(5), {8}, 0, 5);
  auto step = [&](const V& v) {
    TrainState st{{v[0], v[1], v[2], v[3]}, s.opt};
    auto [next, loss] = train_step(st, xb, yb);
    V out = next.params;
    out.push_back(loss);
    return out;
  };
  Runs r = run_all(step, s.params);
  expect_agree(r, 1e-4, 1e-5);
  EXPECT_LT(r.fused_kernels * 2, r.unfused_kernels);
}

// Random programs over a few shapes: chains of elementwise ops, broadcasts,
// reductions and views, with values kept in range.
TEST(Fusion, RandomProgramsAgree) {
  for (uint32_t seed = 0; seed < 40; ++seed) {
    std::mt19937 gen(seed);
    auto pick = [&](int n) { return int(gen() % uint32_t(n)); };
    V x{to_array(random_ref({6, 10}, seed * 3 + 1)), to_array(random_ref({10}, seed * 3 + 2)),
        to_array(random_ref({6, 1}, seed * 3 + 3))};
    auto program = [&, seed](const V& in) {
      std::mt19937 g(seed + 1000);
      auto choose = [&](int n) { return int(g() % uint32_t(n)); };
      std::vector<Array> pool{in[0], in[1], in[2]};
      V outs;
      for (int step = 0; step < 12; ++step) {
        Array a = pool[size_t(choose(int(pool.size())))];
        Array b = pool[size_t(choose(int(pool.size())))];
        Array r;
        switch (choose(12)) {
          case 0: r = a + b; break;
          case 1: r = a * b; break;
          case 2: r = a - b * 0.5; break;
          case 3: r = rt::tanh(a); break;
          case 4: r = rt::exp(rt::minimum(a, 2.0)); break;
          case 5: r = rt::relu(a) + 0.25; break;
          case 6: r = rt::where(a > b, a, b); break;
          case 7: r = rt::maximum(a, b); break;
          case 8: r = a.ndim() == 2 ? rt::sum(a, {1}, true) * 0.1 : rt::sum(a) * 0.1; break;
          case 9: r = a.ndim() == 2 ? rt::transpose(rt::transpose(a)) * 1.5 : a * 1.5; break;
          case 10: r = a.ndim() == 2 && a.dim(0) == 6 && a.dim(1) == 10 ? rt::mean(a, {0}) : rt::sigmoid(a); break;
          default: r = rt::astype(rt::astype(a * 4.0, rt::i32), rt::f32) * 0.25; break;
        }
        pool.push_back(r);
        if (choose(3) == 0) outs.push_back(r);
      }
      outs.push_back(pool.back());
      return outs;
    };
    (void)pick;
    Runs r = run_all(program, x);
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_agree(r, 1e-5, 1e-5);
  }
}

}  // namespace
}  // namespace loupe::test
