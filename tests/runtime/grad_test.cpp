// Every differentiable op's gradient, eagerly and inside jit, against
// central differences of a float64 reference.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime_test_util.h"

namespace loupe::test {
namespace {

using V = std::vector<Array>;
using R = std::vector<Ref>;

TEST(Grad, Unary) {
  Ref x = random_ref({3, 4}, 1, -2, 2);
  // Away from the kinks of relu and abs.
  Ref away = map(random_ref({3, 4}, 2, 0.2, 2), [](double v) { return v; });
  for (int64_t i = 0; i < away.size(); i += 2) away[i] = -away[i];
  Ref pos = random_ref({3, 4}, 3, 0.3, 3);
  check_grad([](const V& a) { return rt::neg(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return -v; }); }, {x});
  check_grad([](const V& a) { return rt::exp(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return std::exp(v); }); }, {x});
  check_grad([](const V& a) { return rt::log(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return std::log(v); }); }, {pos});
  check_grad([](const V& a) { return rt::tanh(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return std::tanh(v); }); }, {x});
  check_grad([](const V& a) { return rt::sqrt(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return std::sqrt(v); }); }, {pos});
  check_grad([](const V& a) { return rt::rsqrt(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return 1 / std::sqrt(v); }); }, {pos});
  check_grad([](const V& a) { return rt::relu(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return v > 0 ? v : 0; }); }, {away});
  check_grad([](const V& a) { return rt::abs(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return std::fabs(v); }); }, {away});
  check_grad([](const V& a) { return rt::sigmoid(a[0]); },
             [](const R& a) { return map(a[0], [](double v) { return 1 / (1 + std::exp(-v)); }); }, {x});
  check_grad([](const V& a) { return rt::gelu(a[0]); },
             [](const R& a) {
               return map(a[0], [](double v) {
                 return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
               });
             },
             {x});
  // A cast to f16 and back: the gradient passes through the cast.
  check_grad([](const V& a) { return rt::astype(rt::astype(a[0], rt::f16), rt::f32) * 2.0; },
             [](const R& a) { return map(a[0], [](double v) { return 2 * double(float(v)); }); }, {x}, 2e-2, 2e-3,
             1e-3);
}

TEST(Grad, BinaryWithBroadcasting) {
  Ref a = random_ref({2, 3}, 4, -2, 2), b = random_ref({3}, 5, 0.5, 2), c = random_ref({2, 1}, 6, -1, 1);
  check_grad([](const V& v) { return v[0] + v[1]; }, [](const R& r) { return zip(r[0], r[1], std::plus<>()); }, {a, b});
  check_grad([](const V& v) { return v[0] - v[1]; }, [](const R& r) { return zip(r[0], r[1], std::minus<>()); },
             {a, c});
  check_grad([](const V& v) { return v[0] * v[1]; }, [](const R& r) { return zip(r[0], r[1], std::multiplies<>()); },
             {a, c});
  check_grad([](const V& v) { return v[0] / v[1]; }, [](const R& r) { return zip(r[0], r[1], std::divides<>()); },
             {a, b});
  check_grad([](const V& v) { return rt::power(v[1], v[0]); },
             [](const R& r) { return zip(r[1], r[0], [](double x, double y) { return std::pow(x, y); }); }, {a, b});
  Ref d = random_ref({2, 3}, 7, -2, 2);
  check_grad([](const V& v) { return rt::maximum(v[0], v[1]); },
             [](const R& r) { return zip(r[0], r[1], [](double x, double y) { return std::max(x, y); }); }, {a, d});
  check_grad([](const V& v) { return rt::minimum(v[0], v[1]); },
             [](const R& r) { return zip(r[0], r[1], [](double x, double y) { return std::min(x, y); }); }, {a, d});
  check_grad([](const V& v) { return rt::where(v[0] > v[1], v[0] * 3.0, v[1]); },
             [](const R& r) { return zip(r[0], r[1], [](double x, double y) { return x > y ? 3 * x : y; }); }, {a, d});
}

TEST(Grad, Reductions) {
  Ref a = random_ref({2, 3, 4}, 8, -2, 2);
  check_grad([](const V& v) { return rt::sum(v[0], {1}); },
             [](const R& r) { return reduce(r[0], {1}, false, 0, std::plus<>()); }, {a});
  check_grad(
      [](const V& v) {
        return rt::sum(v[0], {0, 2}, true);
      },
      [](const R& r) {
        return reduce(r[0], {0, 2}, true, 0, std::plus<>());
      },
      {a});
  check_grad([](const V& v) { return rt::mean(v[0], {2}); },
             [](const R& r) { return map(reduce(r[0], {2}, false, 0, std::plus<>()), [](double x) { return x / 4; }); },
             {a});
  check_grad(
      [](const V& v) { return rt::max(v[0], {2}); },
      [](const R& r) { return reduce(r[0], {2}, false, -INFINITY, [](double x, double y) { return std::max(x, y); }); },
      {a});
  check_grad(
      [](const V& v) {
        return rt::min(v[0], {0, 1});
      },
      [](const R& r) {
        return reduce(r[0], {0, 1}, false, INFINITY, [](double x, double y) { return std::min(x, y); });
      },
      {a});
}

TEST(Grad, ShapeOps) {
  Ref a = random_ref({2, 3, 4}, 9);
  check_grad(
      [](const V& v) {
        return rt::reshape(v[0], {6, 4}) * 2.0;
      },
      [](const R& r) {
        return map(Ref({6, 4}, r[0].v), [](double x) { return 2 * x; });
      },
      {a});
  check_grad(
      [](const V& v) {
        return rt::exp(rt::transpose(v[0], {1, 2, 0}));
      },
      [](const R& r) {
        Ref t({3, 4, 2});
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 4; ++k) t[j * 8 + k * 2 + i] = std::exp(r[0][i * 12 + j * 4 + k]);
        return t;
      },
      {a});
  check_grad(
      [](const V& v) {
        return rt::slice(v[0], {1, 0, 1}, {2, 3, 4}, {1, 2, 2});
      },
      [](const R& r) {
        Ref t({1, 2, 2});
        for (int j = 0; j < 2; ++j)
          for (int k = 0; k < 2; ++k) t[j * 2 + k] = r[0][12 + j * 2 * 4 + 1 + k * 2];
        return t;
      },
      {a});
  Ref b = random_ref({2, 2, 4}, 10);
  check_grad(
      [](const V& v) {
        return rt::concat({v[0], rt::exp(v[1])}, 1);
      },
      [](const R& r) {
        Ref t({2, 5, 4});
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 5; ++j)
            for (int k = 0; k < 4; ++k)
              t[i * 20 + j * 4 + k] = j < 3 ? r[0][i * 12 + j * 4 + k] : std::exp(r[1][i * 8 + (j - 3) * 4 + k]);
        return t;
      },
      {a, b});
  Ref c = random_ref({3, 1}, 11);
  check_grad(
      [](const V& v) {
        return rt::broadcast_to(v[0], {2, 3, 5});
      },
      [](const R& r) {
        Ref t({2, 3, 5});
        for (int64_t i = 0; i < t.size(); ++i) t[i] = at_broadcast(r[0], t.shape, i);
        return t;
      },
      {c});
}

TEST(Grad, Matmul) {
  Ref a = random_ref({3, 4}, 12), b = random_ref({4, 2}, 13);
  check_grad([](const V& v) { return rt::matmul(v[0], v[1]); }, [](const R& r) { return matmul(r[0], r[1]); }, {a, b});
  Ref ba = random_ref({2, 3, 4}, 14);
  // The shared right operand's gradient sums over the batch.
  check_grad([](const V& v) { return rt::matmul(v[0], v[1]); }, [](const R& r) { return matmul(r[0], r[1]); }, {ba, b});
  check_grad([](const V& v) { return rt::matmul(rt::transpose(v[0]), v[1]); },
             [](const R& r) { return matmul(transpose_last(r[0]), r[1]); }, {random_ref({4, 3}, 15), b});
  check_grad([](const V& v) { return rt::matmul(v[0], rt::transpose(v[1])); },
             [](const R& r) { return matmul(r[0], transpose_last(r[1])); }, {a, random_ref({2, 4}, 16)});
}

TEST(Grad, NetworkBuildingBlocks) {
  Ref x = random_ref({3, 5}, 17, -2, 2);
  check_grad([](const V& v) { return rt::softmax(v[0]); }, [](const R& r) { return softmax_last(r[0]); }, {x});
  check_grad([](const V& v) { return rt::log_softmax(v[0]); },
             [](const R& r) { return map(softmax_last(r[0]), [](double p) { return std::log(p); }); }, {x});
  Ref g = random_ref({5}, 18), b = random_ref({5}, 19);
  check_grad([](const V& v) { return rt::layer_norm(v[0], v[1], v[2]); },
             [](const R& r) {
               Ref out = r[0];
               for (int64_t row = 0; row < 3; ++row) {
                 double mu = 0, var = 0;
                 for (int64_t j = 0; j < 5; ++j) mu += r[0][row * 5 + j] / 5;
                 for (int64_t j = 0; j < 5; ++j) var += (r[0][row * 5 + j] - mu) * (r[0][row * 5 + j] - mu) / 5;
                 for (int64_t j = 0; j < 5; ++j)
                   out[row * 5 + j] = (r[0][row * 5 + j] - mu) / std::sqrt(var + 1e-5) * r[1][j] + r[2][j];
               }
               return out;
             },
             {x, g, b}, 5e-3, 5e-4);
  // Embedding rows: repeated indices accumulate.
  Array idx = rt::array<int32_t>({1, 3, 1}, {3});
  check_grad([&](const V& v) { return rt::take(v[0], idx); },
             [](const R& r) {
               Ref t({3, 2});
               int pick[3] = {1, 3, 1};
               for (int i = 0; i < 3; ++i)
                 for (int j = 0; j < 2; ++j) t[i * 2 + j] = r[0][pick[i] * 2 + j];
               return t;
             },
             {random_ref({4, 2}, 20)});
  Array labels = rt::array<int32_t>({2, 0, 4}, {3});
  check_grad([&](const V& v) { return rt::reshape(rt::cross_entropy(v[0], labels), {1}); },
             [](const R& r) {
               Ref sm = softmax_last(r[0]);
               int lab[3] = {2, 0, 4};
               double ce = 0;
               for (int i = 0; i < 3; ++i) ce -= std::log(sm[i * 5 + lab[i]]) / 3;
               return Ref({1}, std::vector<double>{ce});
             },
             {x});
}

TEST(Grad, Attention) {
  Ref q = random_ref({1, 2, 5, 4}, 21), k = random_ref({1, 2, 7, 4}, 22), v = random_ref({1, 2, 7, 3}, 23);
  for (bool causal : {false, true}) {
    for (auto impl : {rt::AttentionImpl::naive, rt::AttentionImpl::fused}) {
      auto ref = [causal](const R& r) {
        // The same reference as the forward test, inlined for the gradient.
        size_t rank = r[0].shape.size();
        int64_t sq = r[0].shape[rank - 2], d = r[0].shape[rank - 1], sk = r[1].shape[rank - 2],
                dv = r[2].shape[rank - 1];
        int64_t batch = r[0].size() / (sq * d);
        Shape os(r[0].shape.begin(), r[0].shape.end() - 1);
        os.push_back(dv);
        Ref out(os);
        for (int64_t bb = 0; bb < batch; ++bb)
          for (int64_t i = 0; i < sq; ++i) {
            std::vector<double> s(static_cast<size_t>(sk));
            double mx = -INFINITY, z = 0;
            for (int64_t j = 0; j < sk; ++j) {
              double dp = 0;
              for (int64_t c = 0; c < d; ++c) dp += r[0][bb * sq * d + i * d + c] * r[1][bb * sk * d + j * d + c];
              s[size_t(j)] = causal && j > i + (sk - sq) ? -INFINITY : dp / std::sqrt(double(d));
              mx = std::max(mx, s[size_t(j)]);
            }
            for (double& e : s) z += (e = std::exp(e - mx));
            for (int64_t c = 0; c < dv; ++c) {
              double acc = 0;
              for (int64_t j = 0; j < sk; ++j) acc += s[size_t(j)] / z * r[2][bb * sk * dv + j * dv + c];
              out[bb * sq * dv + i * dv + c] = acc;
            }
          }
        return out;
      };
      check_grad([=](const V& x) { return rt::attention(x[0], x[1], x[2], causal, impl); }, ref, {q, k, v});
    }
  }
}

TEST(Grad, OfANonScalarFunctionIsAnError) {
  Array x = rt::ones({3});
  EXPECT_THROW(rt::grad([](Array a) { return a * 2.0; })(x), rt::ShapeError);
  EXPECT_THROW(rt::grad([](Array a) { return rt::sum(a); })(rt::arange(0, 3)), rt::ShapeError);  // integer argument
}

TEST(Grad, NoDependenceGivesZeros) {
  Array x = rt::ones({2, 2});
  Array g = rt::grad([](Array a) { return rt::sum(rt::stop_gradient(a) * 3.0); })(x);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
}

TEST(Grad, Nested) {
  // d²/dx² of x³ = 6x, through grad of grad.
  auto d = rt::grad([](Array x) { return rt::sum(x * x * x); });
  auto dd = rt::grad([&](Array x) { return rt::sum(d(x)); });
  Array x = rt::array<float>({1, 2, -3}, {3});
  EXPECT_EQ(dd(x).to_vector<float>(), (std::vector<float>{6, 12, -18}));
}

}  // namespace
}  // namespace loupe::test
