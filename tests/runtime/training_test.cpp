// A traced training loop learns: the loss of an MLP on synthetic data
// falls, jitted and eagerly, and both agree step by step.
#include <gtest/gtest.h>

#include "mlp.h"
#include "runtime_test_util.h"

namespace loupe::test {
namespace {

using namespace loupe::samples;

// Two classes separated by a hyperplane the network must find.
std::pair<Array, Array> dataset(int64_t n, int64_t dim, uint64_t seed) {
  Array x = rt::random::normal(rt::random::key(seed), {n, dim});
  Array w = rt::random::normal(rt::random::key(seed + 1), {dim, 1});
  Array y = rt::astype(rt::squeeze(rt::matmul(x, w) > 0.0, -1), rt::i32);
  return {x, y};
}

TEST(Training, JittedLossDecreases) {
  auto [x, y] = dataset(256, 16, 10);
  auto params = mlp_init({16, 32, 2}, 11);
  TrainState s{params, rt::adamw_init(params)};
  auto step = rt::jit("train_step",
                      [](TrainState st, Array xb, Array yb) { return train_step(st, xb, yb, rt::AdamW{.lr = 1e-2}); });
  std::vector<float> losses;
  for (int i = 0; i < 60; ++i) {
    auto [next, loss] = step(s, x, y);
    s = next;
    losses.push_back(loss.item<float>());
  }
  EXPECT_LT(losses.back(), 0.5f * losses.front()) << losses.front() << " -> " << losses.back();
  EXPECT_EQ(step.stats().misses, 1u);
  EXPECT_EQ(step.stats().hits, 59u);
  // Accuracy on the training set.
  Array pred = rt::argmax(mlp_forward(s.params, x), 1);
  double acc = rt::mean(rt::astype(rt::equal(pred, y), rt::f32)).item<double>();
  EXPECT_GT(acc, 0.9);
}

TEST(Training, EagerAndJittedStepsAgree) {
  auto [x, y] = dataset(64, 8, 20);
  auto params = mlp_init({8, 16, 2}, 21);
  TrainState eager{params, rt::adamw_init(params)}, jitted = eager;
  auto step = rt::jit("train_step", [](TrainState st, Array xb, Array yb) { return train_step(st, xb, yb); });
  for (int i = 0; i < 5; ++i) {
    auto [e_next, e_loss] = train_step(eager, x, y);
    auto [j_next, j_loss] = step(jitted, x, y);
    EXPECT_NEAR(e_loss.item<float>(), j_loss.item<float>(), 1e-5);
    eager = e_next;
    jitted = j_next;
  }
  for (size_t p = 0; p < eager.params.size(); ++p)
    EXPECT_TRUE(close(jitted.params[p], to_ref(eager.params[p]), 1e-4, 1e-5)) << "param " << p;
}

}  // namespace
}  // namespace loupe::test
