// Helpers for the runtime's tests: float64 reference arrays, random data,
// comparisons, and a gradient checker that compares the runtime's reverse
// mode (eager and jitted) with central differences of a float64 reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "loupe/rt/runtime.h"

namespace loupe::test {

namespace rt = loupe::rt;
using rt::Array;
using rt::Shape;

// A float64 array on the host: the reference the runtime is checked against.
struct Ref {
  Shape shape;
  std::vector<double> v;

  Ref() = default;
  Ref(Shape s, std::vector<double> values) : shape(std::move(s)), v(std::move(values)) {}
  explicit Ref(Shape s, double fill = 0) : shape(std::move(s)), v(size_t(rt::numel(shape)), fill) {}
  int64_t size() const { return int64_t(v.size()); }
  double& operator[](int64_t i) { return v[size_t(i)]; }
  double operator[](int64_t i) const { return v[size_t(i)]; }
};

inline std::vector<double> random_values(int64_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(static_cast<size_t>(n));
  for (double& x : out) x = dist(gen);
  return out;
}

inline Ref random_ref(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  return Ref(shape, random_values(rt::numel(shape), seed, lo, hi));
}

// The reference's values rounded to f32 (what the runtime actually sees).
inline Ref as_f32(Ref r) {
  for (double& x : r.v) x = double(float(x));
  return r;
}

inline Array to_array(const Ref& r, rt::Dtype dtype = rt::f32, rt::Device device = rt::default_device()) {
  if (dtype == rt::f32) {
    std::vector<float> f(r.v.begin(), r.v.end());
    return rt::from_host(f.data(), r.shape, rt::f32, device);
  }
  if (dtype == rt::i32) {
    std::vector<int32_t> i(r.v.size());
    for (size_t k = 0; k < i.size(); ++k) i[k] = int32_t(r.v[k]);
    return rt::from_host(i.data(), r.shape, rt::i32, device);
  }
  if (dtype == rt::i64) {
    std::vector<int64_t> i(r.v.size());
    for (size_t k = 0; k < i.size(); ++k) i[k] = int64_t(r.v[k]);
    return rt::from_host(i.data(), r.shape, rt::i64, device);
  }
  if (dtype == rt::boolean) {
    std::vector<uint8_t> b(r.v.size());
    for (size_t k = 0; k < b.size(); ++k) b[k] = r.v[k] != 0;
    return rt::from_host(b.data(), r.shape, rt::boolean, device);
  }
  return rt::astype(to_array(r, rt::f32, device), dtype);
}

inline Ref to_ref(const Array& a) {
  rt::HostArray h = a.to_host();
  Ref r(h.shape);
  for (int64_t i = 0; i < h.size(); ++i) r[i] = h.at<double>(i);
  return r;
}

// Every element within atol + rtol * |expected|.
inline ::testing::AssertionResult close(const Ref& got, const Ref& want, double rtol = 1e-5, double atol = 1e-6) {
  if (got.shape != want.shape)
    return ::testing::AssertionFailure() << "shape " << rt::shape_str(got.shape) << " vs " << rt::shape_str(want.shape);
  for (int64_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w)))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << g << ", want " << w << " (of " << got.size() << ")";
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult close(const Array& got, const Ref& want, double rtol = 1e-5, double atol = 1e-6) {
  return close(to_ref(got), want, rtol, atol);
}

// ---- Gradient checking ----------------------------------------------------

using RtFn = std::function<Array(const std::vector<Array>&)>;
using RefFn = std::function<Ref(const std::vector<Ref>&)>;

inline double dot(const Ref& a, const Ref& b) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Checks d/dx sum(f(x...) * w) for a random w: the runtime's gradient,
// eagerly and inside jit, against central differences of the float64
// reference at the same (f32-rounded) inputs.
inline void check_grad(const RtFn& f, const RefFn& ref, std::vector<Ref> inputs, double rtol = 2e-3, double atol = 2e-4,
                       double eps = 1e-6) {
  for (Ref& r : inputs) r = as_f32(r);
  Ref out = ref(inputs);
  Ref w = random_ref(out.shape, 99);
  auto ref_loss = [&](const std::vector<Ref>& x) { return dot(ref(x), w); };
  std::vector<Ref> want;
  for (size_t a = 0; a < inputs.size(); ++a) {
    Ref g(inputs[a].shape);
    for (int64_t i = 0; i < inputs[a].size(); ++i) {
      std::vector<Ref> hi = inputs, lo = inputs;
      hi[a][i] += eps;
      lo[a][i] -= eps;
      g[i] = (ref_loss(hi) - ref_loss(lo)) / (2 * eps);
    }
    want.push_back(g);
  }
  std::vector<Array> x;
  for (const Ref& r : inputs) x.push_back(to_array(r));
  Array wa = to_array(w);
  auto loss = [&](std::vector<Array> xs) { return rt::sum(rt::multiply(f(xs), wa)); };
  auto [value, grads] = rt::value_and_grad(loss)(x);
  EXPECT_NEAR(value.item<double>(), ref_loss(inputs), 1e-4 + 1e-4 * std::fabs(ref_loss(inputs))) << "eager value";
  for (size_t a = 0; a < inputs.size(); ++a) EXPECT_TRUE(close(grads[a], want[a], rtol, atol)) << "eager, input " << a;

  auto jitted = rt::jit("grad_check", [&](std::vector<Array> xs) { return rt::value_and_grad(loss)(xs); });
  auto [jvalue, jgrads] = jitted(x);
  EXPECT_NEAR(jvalue.item<double>(), ref_loss(inputs), 1e-4 + 1e-4 * std::fabs(ref_loss(inputs))) << "jit value";
  for (size_t a = 0; a < inputs.size(); ++a) EXPECT_TRUE(close(jgrads[a], want[a], rtol, atol)) << "jit, input " << a;
}

// ---- Reference ops (float64) --------------------------------------------------

inline std::vector<int64_t> strides_of(const Shape& s) { return rt::contiguous_strides(s); }

inline Ref map(const Ref& a, const std::function<double(double)>& fn) {
  Ref r = a;
  for (double& x : r.v) x = fn(x);
  return r;
}

inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n, 1);
  for (size_t d = 0; d < n; ++d) {
    int64_t ea = d + a.size() >= n ? a[d + a.size() - n] : 1;
    int64_t eb = d + b.size() >= n ? b[d + b.size() - n] : 1;
    out[d] = ea == 1 ? eb : ea;
  }
  return out;
}

// The element of `a` (broadcast to `out`) at out's flat index i.
inline double at_broadcast(const Ref& a, const Shape& out, int64_t i) {
  std::vector<int64_t> os = strides_of(out), as = strides_of(a.shape);
  size_t off = out.size() - a.shape.size();
  int64_t ai = 0;
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t idx = (i / os[d]) % out[d];
    if (d >= off && a.shape[d - off] != 1) ai += idx * as[d - off];
  }
  return a[ai];
}

inline Ref zip(const Ref& a, const Ref& b, const std::function<double(double, double)>& fn) {
  Shape s = broadcast_shape(a.shape, b.shape);
  Ref r(s);
  for (int64_t i = 0; i < r.size(); ++i) r[i] = fn(at_broadcast(a, s, i), at_broadcast(b, s, i));
  return r;
}

// Reduces `axes` (sorted) with fn starting from init.
inline Ref reduce(const Ref& a, const std::vector<int>& axes, bool keepdims, double init,
                  const std::function<double(double, double)>& fn) {
  Shape out;
  std::vector<bool> red(a.shape.size(), false);
  for (int ax : axes) red[size_t(ax)] = true;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    if (!red[d]) out.push_back(a.shape[d]);
    else if (keepdims) out.push_back(1);
  }
  Ref r(out, init);
  std::vector<int64_t> st = strides_of(a.shape);
  for (int64_t i = 0; i < a.size(); ++i) {
    int64_t o = 0, mul = 1;
    for (size_t d = a.shape.size(); d-- > 0;) {
      int64_t idx = (i / st[d]) % a.shape[d];
      if (!red[d]) {
        o += idx * mul;
        mul *= a.shape[d];
      }
    }
    r[o] = fn(r[o], a[i]);
  }
  return r;
}

inline Ref matmul(const Ref& a, const Ref& b) {
  // [.., M, K] @ [.., K, N] with equal batch axes.
  size_t r = a.shape.size();
  int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[b.shape.size() - 1];
  int64_t batch = a.size() / (m * k);
  int64_t b_batch = b.size() / (k * n);
  Shape out(a.shape.begin(), a.shape.end() - 1);
  out.push_back(n);
  Ref c(out);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[bi * m * k + i * k + p] * b[(b_batch == 1 ? 0 : bi) * k * n + p * n + j];
        c[bi * m * n + i * n + j] = s;
      }
  return c;
}

inline Ref transpose_last(const Ref& a) {
  size_t r = a.shape.size();
  int64_t m = a.shape[r - 2], n = a.shape[r - 1];
  Shape s = a.shape;
  std::swap(s[r - 2], s[r - 1]);
  Ref t(s);
  int64_t batch = a.size() / (m * n);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) t[b * m * n + j * m + i] = a[b * m * n + i * n + j];
  return t;
}

// softmax over the last axis.
inline Ref softmax_last(const Ref& a) {
  int64_t n = a.shape.back();
  Ref r = a;
  for (int64_t row = 0; row < a.size() / n; ++row) {
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, a[row * n + j]);
    for (int64_t j = 0; j < n; ++j) s += std::exp(a[row * n + j] - mx);
    for (int64_t j = 0; j < n; ++j) r[row * n + j] = std::exp(a[row * n + j] - mx) / s;
  }
  return r;
}

}  // namespace loupe::test
