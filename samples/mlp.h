// A multi-layer perceptron written against the runtime's public API, as a
// user would: parameters, the forward pass, the loss and a training step
// with AdamW. Shared by the demo, the tests and the benchmarks.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "loupe/rt/runtime.h"

namespace loupe::samples {

namespace rt = loupe::rt;
using rt::Array;

// Weights and biases of each layer, in order: w0, b0, w1, b1, ...
inline std::vector<Array> mlp_init(const std::vector<int64_t>& sizes, uint64_t seed,
                                   rt::Device device = rt::default_device()) {
  std::vector<Array> params;
  std::vector<Array> keys = rt::random::split(rt::random::key(seed, device), int(sizes.size()));
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    double scale = std::sqrt(2.0 / double(sizes[i]));
    params.push_back(rt::random::normal(keys[i], {sizes[i], sizes[i + 1]}, rt::f32, 0, scale));
    params.push_back(rt::zeros({sizes[i + 1]}, rt::f32, device));
  }
  return params;
}

inline Array mlp_forward(const std::vector<Array>& params, const Array& x) {
  Array h = x;
  for (size_t i = 0; i < params.size(); i += 2) {
    h = rt::matmul(h, params[i]) + params[i + 1];
    if (i + 2 < params.size()) h = rt::relu(h);
  }
  return h;
}

inline Array mlp_loss(const std::vector<Array>& params, const Array& x, const Array& labels) {
  return rt::cross_entropy(mlp_forward(params, x), labels);
}

struct TrainState {
  std::vector<Array> params;
  rt::AdamWState opt;
  auto tree_fields() { return std::tie(params, opt); }
};

// One batch for a classifier: `features` values a row from a normal
// distribution (seeded, so that every run trains on the same data) and
// labels that cycle through the classes.
inline std::pair<Array, Array> synthetic_batch(int64_t batch, int64_t features, int64_t classes, uint32_t seed = 1) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> host_x(size_t(batch * features));
  std::vector<int32_t> host_y(static_cast<size_t>(batch));
  for (float& v : host_x) v = normal(gen);
  for (size_t i = 0; i < host_y.size(); ++i) host_y[i] = int32_t(i % classes);
  return {rt::array(host_x, {batch, features}), rt::array(host_y, {batch})};
}

// One step: the loss, its gradient and the AdamW update. Returns the new
// state and the loss (still on the device).
inline std::pair<TrainState, Array> train_step(const TrainState& s, const Array& x, const Array& labels,
                                               const rt::AdamW& adamw = {}) {
  auto [loss, grads] = rt::value_and_grad(mlp_loss)(s.params, x, labels);
  auto [params, opt] = rt::adamw_update(adamw, s.params, grads, s.opt);
  return {TrainState{params, opt}, loss};
}

}  // namespace loupe::samples
