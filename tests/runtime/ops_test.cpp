// Every op's values against a float64 reference, eagerly and inside jit.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime_test_util.h"

namespace loupe::test {
namespace {

using rt::f32;

// Runs f eagerly and jitted; both must match the reference.
void check_op(const std::function<Array(const std::vector<Array>&)>& f,
              const std::function<Ref(const std::vector<Ref>&)>& ref, std::vector<Ref> inputs, double rtol = 1e-5,
              double atol = 1e-6, std::vector<rt::Dtype> dtypes = {}) {
  std::vector<Array> x;
  for (size_t i = 0; i < inputs.size(); ++i) {
    rt::Dtype d = i < dtypes.size() ? dtypes[i] : f32;
    if (d == f32) inputs[i] = as_f32(inputs[i]);
    x.push_back(to_array(inputs[i], d));
  }
  Ref want = ref(inputs);
  EXPECT_TRUE(close(f(x), want, rtol, atol)) << "eager";
  auto jitted = rt::jit("check_op", [&](std::vector<Array> xs) { return f(xs); });
  EXPECT_TRUE(close(jitted(x), want, rtol, atol)) << "jit";
}

using V = std::vector<Array>;
using R = std::vector<Ref>;

TEST(Ops, UnaryElementwise) {
  Ref x = random_ref({3, 5}, 1, -3, 3);
  Ref pos = random_ref({3, 5}, 2, 0.1, 4);
  check_op([](const V& a) { return rt::neg(a[0]); }, [](const R& a) { return map(a[0], [](double v) { return -v; }); },
           {x});
  check_op([](const V& a) { return rt::exp(a[0]); },
           [](const R& a) { return map(a[0], [](double v) { return std::exp(v); }); }, {x}, 1e-6);
  check_op([](const V& a) { return rt::log(a[0]); },
           [](const R& a) { return map(a[0], [](double v) { return std::log(v); }); }, {pos}, 1e-6, 1e-7);
  check_op([](const V& a) { return rt::tanh(a[0]); },
           [](const R& a) { return map(a[0], [](double v) { return std::tanh(v); }); }, {x}, 1e-6, 1e-7);
  check_op([](const V& a) { return rt::sqrt(a[0]); },
           [](const R& a) { return map(a[0], [](double v) { return std::sqrt(v); }); }, {pos});
  check_op([](const V& a) { return rt::rsqrt(a[0]); },
           [](const R& a) { return map(a[0], [](double v) { return 1 / std::sqrt(v); }); }, {pos});
  check_op([](const V& a) { return rt::relu(a[0]); },
           [](const R& a) { return map(a[0], [](double v) { return v > 0 ? v : 0; }); }, {x});
  check_op([](const V& a) { return rt::sigmoid(a[0]); },
           [](const R& a) { return map(a[0], [](double v) { return 1 / (1 + std::exp(-v)); }); }, {x}, 1e-6, 1e-7);
  check_op([](const V& a) { return rt::abs(a[0]); },
           [](const R& a) { return map(a[0], [](double v) { return std::fabs(v); }); }, {x});
  check_op([](const V& a) { return rt::gelu(a[0]); },
           [](const R& a) {
             return map(a[0], [](double v) {
               return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
             });
           },
           {x}, 1e-5, 1e-6);
}

TEST(Ops, TranscendentalsAtTheEdges) {
  Ref x(Shape{8}, std::vector<double>{-200, -87, -1e-7, 0, 1e-7, 50, 88, 100});
  Array e = rt::exp(to_array(x));
  Ref want = map(x, [](double v) { return double(float(std::exp(v))); });
  EXPECT_TRUE(close(e, want, 1e-6, 0));
  Ref p(Shape{5}, std::vector<double>{0, 1e-30, 1, 1e30, 3});
  Ref lw = map(p, [](double v) { return std::log(v); });
  EXPECT_TRUE(close(rt::log(to_array(p)), lw, 1e-6, 1e-7));
}

TEST(Ops, BinaryWithBroadcasting) {
  Ref a = random_ref({2, 3, 4}, 3, -2, 2), b = random_ref({3, 1}, 4, -2, 2), c = random_ref({4}, 5, 0.5, 2);
  check_op([](const V& v) { return rt::add(v[0], v[1]); }, [](const R& r) { return zip(r[0], r[1], std::plus<>()); },
           {a, b});
  check_op([](const V& v) { return v[0] - v[1]; }, [](const R& r) { return zip(r[0], r[1], std::minus<>()); }, {a, b});
  check_op([](const V& v) { return v[0] * v[1]; }, [](const R& r) { return zip(r[0], r[1], std::multiplies<>()); },
           {a, c});
  check_op([](const V& v) { return v[0] / v[1]; }, [](const R& r) { return zip(r[0], r[1], std::divides<>()); },
           {a, c});
  check_op([](const V& v) { return rt::power(v[1], v[0]); },
           [](const R& r) { return zip(r[1], r[0], [](double x, double y) { return std::pow(x, y); }); }, {a, c}, 1e-5);
  check_op([](const V& v) { return rt::maximum(v[0], v[1]); },
           [](const R& r) { return zip(r[0], r[1], [](double x, double y) { return std::max(x, y); }); }, {a, b});
  check_op([](const V& v) { return rt::minimum(v[0], v[1]); },
           [](const R& r) { return zip(r[0], r[1], [](double x, double y) { return std::min(x, y); }); }, {a, b});
}

TEST(Ops, ScalarOperandsTakeTheArraysDtype) {
  Ref a = random_ref({4}, 6);
  check_op([](const V& v) { return 2.0 * v[0] + 1.0; },
           [](const R& r) { return map(r[0], [](double x) { return 2 * x + 1; }); }, {a});
  check_op([](const V& v) { return 1.0 - v[0] / 4.0; },
           [](const R& r) { return map(r[0], [](double x) { return 1 - x / 4; }); }, {a});
  Array i = rt::arange(0, 5);  // i32
  EXPECT_EQ((i * 3).dtype(), rt::i32);
  EXPECT_EQ((i * 3).to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 6, 9, 12}));
  EXPECT_THROW(i * 0.5, rt::ShapeError);  // 0.5 does not fit an i32 operand
}

TEST(Ops, ComparisonsLogicAndWhere) {
  Ref a(Shape{6}, std::vector<double>{1, 2, 3, 4, 5, 6}), b(Shape{6}, std::vector<double>{6, 2, 4, 4, 1, 0});
  Array x = to_array(a), y = to_array(b);
  auto vals = [](const Array& m) { return m.to_vector<int>(); };
  EXPECT_EQ(vals(rt::equal(x, y)), (std::vector<int>{0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(vals(rt::not_equal(x, y)), (std::vector<int>{1, 0, 1, 0, 1, 1}));
  EXPECT_EQ(vals(x < y), (std::vector<int>{1, 0, 1, 0, 0, 0}));
  EXPECT_EQ(vals(x <= y), (std::vector<int>{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(vals(x > y), (std::vector<int>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(vals(x >= y), (std::vector<int>{0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(vals(rt::logical_and(x > 2.0, y > 2.0)), (std::vector<int>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(vals(rt::logical_or(x > 4.0, y > 5.0)), (std::vector<int>{1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(vals(rt::logical_not(x > 4.0)), (std::vector<int>{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(rt::where(x > y, x, y).to_vector<float>(), (std::vector<float>{6, 2, 4, 4, 5, 6}));
  EXPECT_EQ(rt::where(x > 3.0, x, 0.0).to_vector<float>(), (std::vector<float>{0, 0, 0, 4, 5, 6}));
  EXPECT_EQ((x > 3.0).dtype(), rt::boolean);
}

TEST(Ops, CastsBetweenEveryDtype) {
  Ref a(Shape{5}, std::vector<double>{-2.7, -0.5, 0, 1.5, 100.25});
  Array x = to_array(a);
  EXPECT_EQ(rt::astype(x, rt::i32).to_vector<int32_t>(), (std::vector<int32_t>{-2, 0, 0, 1, 100}));
  EXPECT_EQ(rt::astype(x, rt::i64).to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 0, 1, 100}));
  EXPECT_EQ(rt::astype(x, rt::boolean).to_vector<int>(), (std::vector<int>{1, 1, 0, 1, 1}));
  EXPECT_EQ(rt::astype(rt::astype(x, rt::i32), f32).to_vector<float>(), (std::vector<float>{-2, 0, 0, 1, 100}));
  // f16 and bf16 store rounded values; arithmetic on them rounds each result.
  Ref third(Shape{1}, std::vector<double>{1.0 / 3});
  EXPECT_FLOAT_EQ(rt::astype(to_array(third), rt::f16).item<float>(), 0.333251953125f);
  EXPECT_FLOAT_EQ(rt::astype(to_array(third), rt::bf16).item<float>(), 0.333984375f);
  Array h = rt::astype(to_array(third), rt::f16);
  EXPECT_EQ((h * 5.0).dtype(), rt::f16);
  // 0.333251953125 * 5 = 1.666259765625 rounds to the nearest f16, 1.666015625.
  EXPECT_FLOAT_EQ((h * 5.0).item<float>(), 1.666015625f);
  EXPECT_EQ(rt::astype(h, f32).dtype(), f32);
}

TEST(Ops, HalfPrecisionFusedMatchesUnfused) {
  Array x = rt::astype(to_array(random_ref({64}, 7, -4, 4)), rt::f16);
  auto f = [](Array a) { return rt::exp(a * 0.5) + rt::tanh(a) * a; };
  Array eager = f(x);
  Array fused = rt::jit("half", f)(x);
  EXPECT_EQ(eager.to_vector<float>(), fused.to_vector<float>());
}

TEST(Ops, Reductions) {
  Ref a = random_ref({2, 3, 4}, 8, -3, 3);
  auto sum_ref = [](std::vector<int> axes, bool keep) {
    return [=](const R& r) { return reduce(r[0], axes, keep, 0, std::plus<>()); };
  };
  check_op([](const V& v) { return rt::sum(v[0]); }, sum_ref({0, 1, 2}, false), {a}, 1e-5);
  check_op([](const V& v) { return rt::sum(v[0], {1}); }, sum_ref({1}, false), {a}, 1e-5);
  check_op([](const V& v) { return rt::sum(v[0], {0, 2}, true); }, sum_ref({0, 2}, true), {a}, 1e-5);
  check_op([](const V& v) { return rt::sum(v[0], {-1}); }, sum_ref({2}, false), {a}, 1e-5);
  check_op([](const V& v) { return rt::mean(v[0], {0}); },
           [](const R& r) { return map(reduce(r[0], {0}, false, 0, std::plus<>()), [](double x) { return x / 2; }); },
           {a}, 1e-5);
  check_op(
      [](const V& v) {
        return rt::max(v[0], {1, 2});
      },
      [](const R& r) {
        return reduce(r[0], {1, 2}, false, -INFINITY, [](double x, double y) { return std::max(x, y); });
      },
      {a});
  check_op(
      [](const V& v) { return rt::min(v[0], {0}, true); },
      [](const R& r) { return reduce(r[0], {0}, true, INFINITY, [](double x, double y) { return std::min(x, y); }); },
      {a});
  Ref b(Shape{2, 4}, std::vector<double>{1, 5, 5, 2, 7, 0, 7, 1});
  EXPECT_EQ(rt::argmax(to_array(b), 1).to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));  // first of ties
  EXPECT_EQ(rt::argmax(to_array(b), 0).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 1, 0}));
  EXPECT_EQ(rt::argmax(to_array(b), 1).dtype(), rt::i32);
  Array ints = rt::arange(0, 10);
  EXPECT_EQ(rt::sum(ints).item<int64_t>(), 45);
  EXPECT_EQ(rt::max(ints).item<int32_t>(), 9);
}

TEST(Ops, ShapeOps) {
  Ref a = random_ref({2, 3, 4}, 9);
  check_op([](const V& v) { return rt::reshape(v[0], {4, -1}); }, [](const R& r) { return Ref({4, 6}, r[0].v); }, {a});
  check_op(
      [](const V& v) {
        return rt::transpose(v[0], {2, 0, 1});
      },
      [](const R& r) {
        Ref t({4, 2, 3});
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 4; ++k) t[k * 6 + i * 3 + j] = r[0][i * 12 + j * 4 + k];
        return t;
      },
      {a});
  check_op(
      [](const V& v) {
        return rt::slice(v[0], {0, 1, 0}, {2, 3, 4}, {1, 1, 2});
      },
      [](const R& r) {
        Ref t({2, 2, 2});
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j)
            for (int k = 0; k < 2; ++k) t[i * 4 + j * 2 + k] = r[0][i * 12 + (j + 1) * 4 + k * 2];
        return t;
      },
      {a});
  Ref b = random_ref({2, 1, 4}, 10);
  check_op(
      [](const V& v) {
        return rt::concat({v[0], v[1]}, 1);
      },
      [](const R& r) {
        Ref t({2, 4, 4});
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 4; ++j)
            for (int k = 0; k < 4; ++k) t[i * 16 + j * 4 + k] = j < 3 ? r[0][i * 12 + j * 4 + k] : r[1][i * 4 + k];
        return t;
      },
      {a, b});
  check_op(
      [](const V& v) {
        return rt::broadcast_to(v[0], {3, 2, 5, 4});
      },
      [](const R& r) {
        Ref t({3, 2, 5, 4});
        for (int64_t i = 0; i < t.size(); ++i) t[i] = at_broadcast(r[0], t.shape, i);
        return t;
      },
      {b});
  Array x = to_array(a);
  EXPECT_EQ(rt::expand_dims(x, 1).shape(), (Shape{2, 1, 3, 4}));
  EXPECT_EQ(rt::squeeze(rt::expand_dims(x, -1), -1).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(rt::transpose(x).shape(), (Shape{4, 3, 2}));
}

TEST(Ops, Matmul) {
  Ref a = random_ref({3, 4}, 11), b = random_ref({4, 5}, 12);
  check_op([](const V& v) { return rt::matmul(v[0], v[1]); }, [](const R& r) { return matmul(r[0], r[1]); }, {a, b},
           1e-5);
  Ref ba = random_ref({2, 3, 4}, 13), bb = random_ref({2, 4, 5}, 14);
  check_op([](const V& v) { return rt::matmul(v[0], v[1]); }, [](const R& r) { return matmul(r[0], r[1]); }, {ba, bb},
           1e-5);
  // A shared right operand broadcasts over the batch.
  check_op([](const V& v) { return rt::matmul(v[0], v[1]); }, [](const R& r) { return matmul(r[0], r[1]); }, {ba, b},
           1e-5);
  // Transposed operands (folded into the BLAS call under jit).
  check_op([](const V& v) { return rt::matmul(rt::transpose(v[0]), v[1]); },
           [](const R& r) { return matmul(transpose_last(r[0]), r[1]); }, {random_ref({4, 3}, 15), b}, 1e-5);
  check_op([](const V& v) { return rt::matmul(v[0], rt::transpose(v[1])); },
           [](const R& r) { return matmul(r[0], transpose_last(r[1])); }, {a, random_ref({5, 4}, 16)}, 1e-5);
  // Vectors.
  Ref vec = random_ref({4}, 17);
  Array mv = rt::matmul(to_array(a), to_array(vec));
  EXPECT_EQ(mv.shape(), (Shape{3}));
  EXPECT_TRUE(close(mv, Ref({3}, matmul(as_f32(a), Ref({4, 1}, as_f32(vec).v)).v), 1e-5));
  EXPECT_EQ(rt::matmul(to_array(vec), to_array(b)).shape(), (Shape{5}));
  EXPECT_EQ(rt::matmul(to_array(vec), to_array(vec)).shape(), (Shape{}));
  // f16 operands compute in f32 and round the result.
  Array h = rt::matmul(rt::astype(to_array(a), rt::f16), rt::astype(to_array(b), rt::f16));
  EXPECT_EQ(h.dtype(), rt::f16);
  EXPECT_TRUE(close(h, matmul(a, b), 2e-2, 2e-2));
}

TEST(Ops, NetworkBuildingBlocks) {
  Ref x = random_ref({3, 6}, 18, -3, 3);
  check_op([](const V& v) { return rt::softmax(v[0]); }, [](const R& r) { return softmax_last(r[0]); }, {x}, 1e-5,
           1e-7);
  check_op([](const V& v) { return rt::log_softmax(v[0]); },
           [](const R& r) { return map(softmax_last(r[0]), [](double p) { return std::log(p); }); }, {x}, 1e-5, 1e-6);
  Ref g = random_ref({6}, 19), b = random_ref({6}, 20);
  auto ln_ref = [](const R& r) {
    Ref out = r[0];
    int64_t n = 6;
    for (int64_t row = 0; row < 3; ++row) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < n; ++j) mu += r[0][row * n + j] / double(n);
      for (int64_t j = 0; j < n; ++j) var += (r[0][row * n + j] - mu) * (r[0][row * n + j] - mu) / double(n);
      for (int64_t j = 0; j < n; ++j)
        out[row * n + j] = (r[0][row * n + j] - mu) / std::sqrt(var + 1e-5) * r[1][j] + r[2][j];
    }
    return out;
  };
  check_op([](const V& v) { return rt::layer_norm(v[0], v[1], v[2]); }, ln_ref, {x, g, b}, 1e-4, 1e-5);
  // Embedding gather.
  Ref table = random_ref({5, 3}, 21);
  Array idx = rt::array<int32_t>({4, 0, 4, 2}, {2, 2});
  Array rows = rt::take(to_array(table), idx);
  EXPECT_EQ(rows.shape(), (Shape{2, 2, 3}));
  Ref tf = as_f32(table);
  Ref want({2, 2, 3});
  int picks[4] = {4, 0, 4, 2};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) want[i * 3 + j] = tf[picks[i] * 3 + j];
  EXPECT_TRUE(close(rows, want));
  // One-hot and cross-entropy.
  Array labels = rt::array<int32_t>({2, 0, 1}, {3});
  EXPECT_EQ(rt::one_hot(labels, 3).to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  Ref logits = random_ref({3, 4}, 22, -2, 2);
  double ce = 0;
  Ref lf = as_f32(logits);
  Ref sm = softmax_last(lf);
  int lab[3] = {2, 0, 1};
  for (int i = 0; i < 3; ++i) ce -= std::log(sm[i * 4 + lab[i]]) / 3;
  EXPECT_NEAR(rt::cross_entropy(to_array(logits), labels).item<double>(), ce, 1e-5);
}

// Reference attention: softmax(q kᵀ · scale + mask) v, per batch.
Ref attention_ref(const Ref& q, const Ref& k, const Ref& v, bool causal) {
  size_t r = q.shape.size();
  int64_t sq = q.shape[r - 2], d = q.shape[r - 1], sk = k.shape[r - 2], dv = v.shape[r - 1];
  int64_t batch = q.size() / (sq * d);
  Shape os(q.shape.begin(), q.shape.end() - 1);
  os.push_back(dv);
  Ref out(os);
  double scale = 1 / std::sqrt(double(d));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < sq; ++i) {
      std::vector<double> s(static_cast<size_t>(sk));
      double mx = -INFINITY;
      for (int64_t j = 0; j < sk; ++j) {
        double dotp = 0;
        for (int64_t c = 0; c < d; ++c) dotp += q[b * sq * d + i * d + c] * k[b * sk * d + j * d + c];
        s[size_t(j)] = causal && j > i + (sk - sq) ? -INFINITY : dotp * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - mx));
      for (int64_t c = 0; c < dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < sk; ++j) acc += s[size_t(j)] / z * v[b * sk * dv + j * dv + c];
        out[b * sq * dv + i * dv + c] = acc;
      }
    }
  return out;
}

TEST(Ops, AttentionNaiveAndFusedAgree) {
  for (bool causal : {false, true}) {
    // Lengths that are not multiples of the fused kernel's blocks.
    Ref q = random_ref({2, 3, 70, 16}, 23), k = random_ref({2, 3, 150, 16}, 24), v = random_ref({2, 3, 150, 8}, 25);
    auto ref = [causal](const R& r) { return attention_ref(r[0], r[1], r[2], causal); };
    for (auto impl : {rt::AttentionImpl::naive, rt::AttentionImpl::fused}) {
      check_op([=](const V& x) { return rt::attention(x[0], x[1], x[2], causal, impl); }, ref, {q, k, v}, 1e-4, 1e-5);
    }
  }
}

TEST(Ops, CreationAndRandom) {
  EXPECT_EQ(rt::full({2, 2}, 7).to_vector<float>(), (std::vector<float>{7, 7, 7, 7}));
  EXPECT_EQ(rt::zeros({3}, rt::i64).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(rt::ones({2}, rt::boolean).to_vector<int>(), (std::vector<int>{1, 1}));
  EXPECT_EQ(rt::arange(2, 11, 3).to_vector<int32_t>(), (std::vector<int32_t>{2, 5, 8}));
  EXPECT_EQ(rt::arange(0, 1, 0.25, f32).to_vector<float>(), (std::vector<float>{0, 0.25, 0.5, 0.75}));
  Array k = rt::random::key(42);
  Array a = rt::random::normal(k, {20000});
  Array b = rt::random::normal(k, {20000});
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());  // same key, same numbers
  EXPECT_NEAR(rt::mean(a).item<double>(), 0, 0.03);
  EXPECT_NEAR(rt::mean(a * a).item<double>(), 1, 0.04);
  auto keys = rt::random::split(k, 2);
  EXPECT_NE(rt::random::uniform(keys[0], {8}).to_vector<float>(), rt::random::uniform(keys[1], {8}).to_vector<float>());
  Array u = rt::random::uniform(keys[0], {20000}, f32, 2, 4);
  EXPECT_GE(rt::min(u).item<float>(), 2.0f);
  EXPECT_LT(rt::max(u).item<float>(), 4.0f);
  EXPECT_NEAR(rt::mean(u).item<double>(), 3, 0.03);
  Array ri = rt::random::randint(keys[1], {1000}, 3, 7);
  EXPECT_EQ(rt::min(ri).item<int32_t>(), 3);
  EXPECT_EQ(rt::max(ri).item<int32_t>(), 6);
  // Random numbers inside jit equal the eager ones.
  auto f = rt::jit("rand", [](Array key) { return rt::random::normal(key, {16}) * 2.0; });
  EXPECT_EQ(f(k).to_vector<float>(), (rt::random::normal(k, {16}) * 2.0).to_vector<float>());
}

}  // namespace
}  // namespace loupe::test
