// The compile cache: hits on repeated signatures, misses with the reason
// against the closest earlier signature for each kind of change, ahead-of-
// time compiles, and the errors users get at trace time.
#include <gtest/gtest.h>

#include "runtime_test_util.h"

namespace loupe::test {
namespace {

using rt::f32;

Array filled(const Shape& s, rt::Dtype d = f32, rt::Device dev = rt::default_device()) {
  return rt::astype(rt::full(s, 1, f32, dev), d);
}

// An opaque kernel (matmul) of views (strided slices) needs copies of them,
// which lowering appends to its groups while it walks them: wherever that
// happens in the list of groups (here after 0 to 9 reductions, a group
// each), the program computes what a float64 reference does.
TEST(Jit, AnOpaqueKernelOfViewsLowersAfterAnyNumberOfGroups) {
  Ref a = random_ref({8, 8}, 21), b = random_ref({8, 8}, 22);
  for (int chain = 0; chain < 10; ++chain) {
    auto f = rt::jit("views", [chain](Array x, Array y) {
      for (int i = 0; i < chain; ++i) x = rt::sum(x, {1}, true) * 0.25 + x;
      return rt::matmul(rt::slice(x, {0, 0}, {8, 8}, {2, 1}), rt::slice(y, {0, 0}, {8, 8}, {1, 2}));
    });
    Ref x = a;
    for (int i = 0; i < chain; ++i) {
      Ref row = reduce(x, {1}, true, 0, [](double s, double v) { return s + v; });
      x = zip(map(row, [](double s) { return s * 0.25; }), x, [](double s, double v) { return s + v; });
    }
    Ref l({4, 8}), r({8, 4});
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 8; ++j) l[i * 8 + j] = x[2 * i * 8 + j];
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j) r[i * 4 + j] = b[i * 8 + 2 * j];
    EXPECT_TRUE(close(f(to_array(a), to_array(b)), matmul(l, r), 1e-4, 1e-4)) << "after " << chain << " reductions";
  }
}

TEST(Jit, HitsOnARepeatedSignature) {
  auto f = rt::jit("f", [](Array x, Array y) { return x * y + 1.0; }, {.arg_names = {"x", "y"}});
  Array x = filled({4, 8}), y = filled({8});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f(x, y).shape(), (Shape{4, 8}));
  rt::JitStats s = f.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.cache_entries, 1u);
  EXPECT_EQ(s.last_reason, "first compile");
  // New values of the same signature still hit.
  f(filled({4, 8}) * 3.0, filled({8}));
  EXPECT_EQ(f.stats().hits, 5u);
}

TEST(Jit, ShapeChangeNamesTheArgument) {
  auto f = rt::jit("f", [](Array w, Array x) { return rt::matmul(x, w); }, {.arg_names = {"w", "x"}});
  f(filled({128, 4}), filled({32, 128}));
  f(filled({128, 4}), filled({31, 128}));
  EXPECT_EQ(f.stats().last_reason, "arg 1 `x`: now f32[31,128], before f32[32,128]");
  // Back to a cached shape: a hit, not a miss.
  f(filled({128, 4}), filled({32, 128}));
  EXPECT_EQ(f.stats().misses, 2u);
  EXPECT_EQ(f.stats().hits, 1u);
}

TEST(Jit, DtypeChange) {
  auto f = rt::jit("f", [](Array x) { return x * 2.0; }, {.arg_names = {"x"}});
  f(filled({3}));
  f(filled({3}, rt::f16));
  EXPECT_EQ(f.stats().last_reason, "arg 0 `x`: now f16[3], before f32[3]");
}

TEST(Jit, StaticArgumentChange) {
  auto f = rt::jit("f", [](Array x, bool training, double rate) { return training ? x * rate : x; },
                   {.arg_names = {"x", "training", "rate"}});
  Array x = filled({3});
  EXPECT_EQ(f(x, true, 0.5).to_vector<float>(), (std::vector<float>{0.5, 0.5, 0.5}));
  EXPECT_EQ(f(x, false, 0.5).to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(f.stats().last_reason, "static arg `training`: now false, before true");
  f(x, false, 0.25);
  EXPECT_EQ(f.stats().last_reason, "static arg `rate`: now 0.25, before 0.5");
  f(x, true, 0.5);  // cached
  EXPECT_EQ(f.stats().misses, 3u);
}

TEST(Jit, DeviceChange) {
  auto f = rt::jit("f", [](Array x) { return x + 1.0; }, {.arg_names = {"x"}});
  f(filled({4}));
  Array on1 = f(filled({4}, f32, rt::cpu(1)));
  EXPECT_EQ(on1.device(), rt::cpu(1));
  EXPECT_EQ(f.stats().last_reason, "arg 0 `x`: now f32[4] on cpu:1, before f32[4]");
  EXPECT_EQ(on1.to_vector<float>(), (std::vector<float>{2, 2, 2, 2}));
}

TEST(Jit, ReasonIsAgainstTheClosestSignature) {
  auto f = rt::jit("f", [](Array x, Array y) { return rt::sum(x) + rt::sum(y); }, {.arg_names = {"x", "y"}});
  f(filled({32, 128}), filled({8}));
  f(filled({16, 64}), filled({4}));
  f(filled({31, 128}), filled({8}));  // one argument away from the first
  EXPECT_EQ(f.stats().last_reason, "arg 0 `x`: now f32[31,128], before f32[32,128]");
  f(filled({16, 64}), filled({5}));  // one argument away from the second
  EXPECT_EQ(f.stats().last_reason, "arg 1 `y`: now f32[5], before f32[4]");
}

TEST(Jit, TreeArgumentsNameTheLeaf) {
  auto f = rt::jit("f", [](std::vector<Array> params, Array x) { return rt::sum(params[1] * x); },
                   {.arg_names = {"params", "x"}});
  f(std::vector<Array>{filled({2}), filled({3})}, filled({3}));
  f(std::vector<Array>{filled({2}), filled({4})}, filled({4}));
  EXPECT_EQ(f.stats().last_reason,
            "arg 0 `params[1]`: now f32[4], before f32[3]; arg 1 `x`: now f32[4], before f32[3]");
  f(std::vector<Array>{filled({2}), filled({3}), filled({3})}, filled({3}));
  EXPECT_EQ(f.stats().last_reason, "arg 0 `params`: now 3 leaves, before 2");
}

TEST(Jit, UnnamedArguments) {
  auto f = rt::jit("f", [](Array x, int n) { return x * double(n); });
  f(filled({2}), 1);
  f(filled({2}), 2);
  EXPECT_EQ(f.stats().last_reason, "static arg 1: now 2, before 1");
  f(filled({3}), 2);
  EXPECT_EQ(f.stats().last_reason, "arg 0: now f32[3], before f32[2]");
}

TEST(Jit, NewFunctionObjectAtTheSameCallSite) {
  Array x = filled({4});
  std::vector<std::string> reasons;
  for (int i = 0; i < 3; ++i) {
    auto f = rt::jit("in_loop", [](Array a) { return a * 2.0; });  // re-created every iteration
    f(x);
    reasons.push_back(f.stats().last_reason);
  }
  EXPECT_EQ(reasons[0], "first compile");
  EXPECT_EQ(reasons[1], "new function object at the same call site");
  EXPECT_EQ(reasons[2], "new function object at the same call site");
  // A new object with a new signature says both.
  auto g = rt::jit("in_loop2", [](Array a) { return a; });
  g(x);
  for (int i = 0; i < 2; ++i) {
    auto h = rt::jit("in_loop3", [](Array a) { return a; });
    h(i == 0 ? filled({4}) : filled({5}));
    if (i == 1) {
      EXPECT_EQ(h.stats().last_reason, "new function object at the same call site; arg 0: now f32[5], before f32[4]");
    }
  }
}

TEST(Jit, CompileForIsAheadOfTime) {
  auto f = rt::jit("serve", [](Array x, Array w) { return rt::relu(rt::matmul(x, w)); }, {.arg_names = {"x", "w"}});
  f.compile_for(rt::spec({8, 16}), rt::spec({16, 4}));
  rt::JitStats s = f.stats();
  EXPECT_EQ(s.aot, 1u);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_GT(s.last_kernels, 0u);
  f(filled({8, 16}), filled({16, 4}));
  EXPECT_EQ(f.stats().hits, 1u);
  EXPECT_EQ(f.stats().misses, 0u);
  // An abstract array has no value to run on.
  EXPECT_THROW(f(rt::spec({8, 16}), filled({16, 4})), rt::RuntimeError);
}

TEST(Jit, JitInsideJitIsInlined) {
  auto inner = rt::jit("inner", [](Array x) { return x * 2.0; });
  auto outer = rt::jit("outer", [&](Array x) { return inner(x) + 1.0; });
  EXPECT_EQ(outer(filled({3})).to_vector<float>(), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(inner.stats().misses, 0u);
  EXPECT_EQ(outer.stats().last_kernels, 1u);  // one fused kernel for both
}

TEST(Jit, ReturnsTreesAndPassesCapturedArrays) {
  Array bias = rt::array<float>({1, 2}, {2});
  auto f = rt::jit("tree", [&](std::pair<Array, Array> p) {
    return std::make_tuple(p.first + bias, std::vector<Array>{p.second, p.second * 2.0});
  });
  auto [a, v] = f(std::make_pair(filled({2}), filled({3})));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(v[1].to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(Jit, ShapeErrorsNameTheOpShapesAndLine) {
  auto f = rt::jit("bad", [](Array x, Array w) { return rt::matmul(x, w); });
  int line = __LINE__ - 1;
  try {
    f(filled({32, 784}), filled({128, 10}));
    FAIL() << "no error";
  } catch (const rt::ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), "matmul(f32[32,784], f32[128,10]) at jit_test.cpp:" + std::to_string(line) +
                                         ": contracting axes differ (784 vs 128)");
  }
  int add_line = __LINE__ + 2;
  try {
    Array r = filled({2, 3}) + filled({4});  // operator+: the expression's line
    FAIL() << "no error";
  } catch (const rt::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("add(f32[2,3], f32[4]) at jit_test.cpp:" + std::to_string(add_line)),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("do not broadcast"), std::string::npos);
  }
  try {
    rt::log(rt::arange(0, 3));
    FAIL() << "no error";
  } catch (const rt::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("log(i32[3])"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("floating-point"), std::string::npos);
  }
  EXPECT_THROW(filled({2}) * filled({2}, rt::f16), rt::ShapeError);
  EXPECT_THROW(rt::reshape(filled({6}), {4, -1}), rt::ShapeError);
}

TEST(Jit, ReadingATracerIsAnError) {
  auto f = rt::jit("reads", [](Array x) {
    float v = x.item<float>();  // not allowed while tracing
    return x * double(v);
  });
  try {
    f(filled({1}));
    FAIL() << "no error";
  } catch (const rt::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("inside jit or grad"), std::string::npos) << e.what();
  }
  Array leaked;
  auto g = rt::jit("leaks", [&](Array x) {
    leaked = x * 2.0;
    return x;
  });
  g(filled({2}));
  try {
    (leaked + 1.0).to_host();
    FAIL() << "no error";
  } catch (const rt::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("escaped"), std::string::npos) << e.what();
  }
}

TEST(Jit, OptimisedIrIsReadable) {
  auto f = rt::jit("ir", [](Array x) { return rt::exp(x * 1.0 + 0.0) * 2.0; });
  f(filled({4}));
  const std::string& ir = f.stats().last_ir;
  EXPECT_NE(ir.find("func ir(%0: f32[4])"), std::string::npos) << ir;
  EXPECT_NE(ir.find("exp("), std::string::npos);
  EXPECT_EQ(ir.find("add("), std::string::npos) << "x + 0 was not folded:\n" << ir;
  EXPECT_NE(ir.find("passes: dce"), std::string::npos);
  EXPECT_NE(ir.find("kernels: 1"), std::string::npos);
  EXPECT_NE(ir.find("loop_fusion[exp+mul]"), std::string::npos) << ir;
}

}  // namespace
}  // namespace loupe::test
