// The CUDA device on a GPU (label gpu; each test skips with the reason
// without one): memory, copies, kernels against the CPU device, attention,
// 16-bit floats, and what a capture records.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

#include "loupe/prof/capture.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"
#include "runtime/runtime_test_util.h"

namespace loupe::test {
namespace {

namespace prof = loupe::prof;
using V = std::vector<Array>;

#define REQUIRE_GPU()                                                                 \
  do {                                                                                \
    std::string why_;                                                                 \
    if (rt::cuda_device_count(&why_) == 0) GTEST_SKIP() << "no usable GPU: " << why_; \
  } while (0)

TEST(CudaGpu, MemoryIsAccountedAsOnTheCpuDevice) {
  REQUIRE_GPU();
  rt::Device d = rt::cuda(0);
  rt::MemoryStats before = rt::memory_stats(d);
  EXPECT_GT(before.capacity, 0) << "capacity from cudaMemGetInfo";
  Array a = rt::zeros({1024, 1024}, rt::f32, d);
  a.block_until_ready();
  rt::MemoryStats during = rt::memory_stats(d);
  EXPECT_GE(during.allocated - before.allocated, 4 << 20);
  EXPECT_GE(during.reserved, during.allocated);
  a = Array();
  rt::synchronize(d);
  EXPECT_LT(rt::memory_stats(d).allocated, during.allocated);
  rt::empty_cache(d);
}

TEST(CudaGpu, CopiesRoundTripAndCrossDevices) {
  REQUIRE_GPU();
  rt::Device d = rt::cuda(0);
  Ref r = random_ref({300, 77}, 5);
  Array g = to_array(r, rt::f32, d);
  EXPECT_EQ(g.device(), d);
  EXPECT_TRUE(close(g, as_f32(r), 0, 0));
  Array c = rt::to_device(g * 2.0, rt::cpu(0));
  EXPECT_EQ(c.device(), rt::cpu(0));
  EXPECT_TRUE(close(c, map(as_f32(r), [](double v) { return double(float(v) * 2.0f); }), 0, 0));
  Array back = rt::to_device(c + 1.0, d);
  EXPECT_TRUE(close(back, map(as_f32(r), [](double v) { return double(float(v) * 2.0f + 1.0f); }), 0, 0));
  EXPECT_EQ((rt::sum(g) * 0.0).item<float>(), 0.0f);
}

TEST(CudaGpu, KernelsAgreeWithTheCpuDevice) {
  REQUIRE_GPU();
  rt::Device d = rt::cuda(0);
  Ref xr = random_ref({64, 300}, 1, -3, 3), wr = random_ref({300, 40}, 2);
  auto f = [](const V& v) {
    Array h = rt::matmul(v[0], v[1]);
    return V{rt::softmax(h), rt::argmax(h, 1), rt::sum(rt::gelu(v[0]), {0}),
             rt::layer_norm(h, rt::ones({40}, rt::f32, v[0].device()), rt::zeros({40}, rt::f32, v[0].device()))};
  };
  auto jf = rt::jit("agree", f);
  V cpu = jf(V{to_array(xr, rt::f32, rt::cpu(0)), to_array(wr, rt::f32, rt::cpu(0))});
  V gpu = jf(V{to_array(xr, rt::f32, d), to_array(wr, rt::f32, d)});
  ASSERT_EQ(cpu.size(), gpu.size());
  // FP32 products (TF32 is off unless LOUPE_CUDA_TF32=1), CUDA's expf and
  // tanhf against the CPU device's polynomials: a few ulp apart.
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_TRUE(close(gpu[i], to_ref(cpu[i]), 1e-4, 1e-5)) << "output " << i;
}

TEST(CudaGpu, FusedAttentionMatchesNaive) {
  REQUIRE_GPU();
  rt::Device d = rt::cuda(0);
  for (bool causal : {false, true}) {
    Array q = to_array(random_ref({2, 3, 100, 64}, 1), rt::f32, d);
    Array k = to_array(random_ref({2, 3, 130, 64}, 2), rt::f32, d);
    Array v = to_array(random_ref({2, 3, 130, 32}, 3), rt::f32, d);
    Array weight = to_array(random_ref({2, 3, 100, 32}, 4), rt::f32, d);
    auto loss = [&](V x, rt::AttentionImpl impl) {
      return rt::sum(rt::attention(x[0], x[1], x[2], causal, impl) * weight);
    };
    auto [lf, gf] = rt::value_and_grad([&](V x) { return loss(x, rt::AttentionImpl::fused); })(V{q, k, v});
    auto [ln, gn] = rt::value_and_grad([&](V x) { return loss(x, rt::AttentionImpl::naive); })(V{q, k, v});
    EXPECT_NEAR(lf.item<double>(), ln.item<double>(), 1e-3 * std::fabs(ln.item<double>()) + 1e-3);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(close(gf[size_t(i)], to_ref(gn[size_t(i)]), 1e-3, 1e-4)) << "grad " << i;
  }
}

TEST(CudaGpu, HalfPrecisionWithinItsTolerance) {
  REQUIRE_GPU();
  rt::Device d = rt::cuda(0);
  Ref a = random_ref({128, 256}, 7), b = random_ref({256, 64}, 8);
  Array c = rt::matmul(to_array(a, rt::f16, d), to_array(b, rt::f16, d)).astype(rt::f32);
  // f16 operands (11-bit mantissas), f32 accumulation, an f16 result:
  // relative error within about 2^-10 of each term's magnitude.
  EXPECT_TRUE(close(c, matmul(a, b), 1e-2, 3e-2));
}

TEST(CudaGpu, CaptureLinksKernelsToTheirLaunches) {
  REQUIRE_GPU();
  rt::Device d = rt::cuda(0);
  TempDir dir;
  std::string path = dir.file("cuda.db");
  Array x = to_array(random_ref({256, 512}, 1), rt::f32, d), w = to_array(random_ref({512, 256}, 2), rt::f32, d);
  auto step = rt::jit("step", [](Array a, Array b) { return rt::sum(rt::relu(rt::matmul(a, b)) * 2.0); });
  {
    prof::Capture capture({.path = path});
    for (int i = 0; i < 3; ++i) step(x, w).item<float>();
    rt::synchronize(d);
    capture.stop();
  }
  prof::TraceModel m = prof::load_trace(path);
  std::set<uint64_t> launched;
  for (const auto& l : m.launches)
    for (size_t i = 0; i < l.size(); ++i) launched.insert(l.correlation[i]);
  size_t kernels = 0, linked = 0;
  for (const auto& ops : m.device_ops)
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops.kind[i] != prof::DeviceOpKind::kernel) continue;
      ++kernels;
      linked += launched.count(ops.correlation[i]);
    }
  EXPECT_GE(kernels, 6u);
  EXPECT_EQ(linked, kernels) << "every kernel links to the runtime's launch (CUPTI external correlation)";
  bool cuda_device = false;
  for (const auto& dev : m.devices) cuda_device |= dev.kind == prof::DeviceKind::cuda && dev.memory_capacity > 0;
  EXPECT_TRUE(cuda_device);
  EXPECT_GT(step.stats().last_codegen_ns, 0);
  EXPECT_NE(step.stats().last_ir.find("compiled by NVRTC"), std::string::npos) << step.stats().last_ir;
}

}  // namespace
}  // namespace loupe::test
