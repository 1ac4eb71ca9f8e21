// The CUDA device on a GPU (label gpu; each test skips with the reason
// without one): memory, copies, kernels against the CPU device, attention
// (cuDNN's and loupe's), 16-bit floats, and what a capture records, over
// many captures in one process.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

#include "backend/cuda/cudnn_attention.h"
#include "loupe/prof/capture.h"
#include "loupe/prof/cupti.h"
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

struct AttentionCase {
  rt::Dtype dtype;
  int64_t sq, sk, d, dv;
  bool causal;
};

// Attention's value and gradients through one jitted step on `device`:
// sum(attention(q, k, v) * w) over a [2, 3, S, D] batch of heads.
std::pair<Array, V> attention_step(const AttentionCase& c, const V& qkv, const Array& w, std::string* compiled) {
  auto loss = [c](V x, Array weight) {
    return rt::sum(rt::attention(x[0], x[1], x[2], c.causal, rt::AttentionImpl::fused).astype(rt::f32) * weight);
  };
  auto step = rt::jit("attention_step", [&](V x, Array weight) { return rt::value_and_grad(loss)(x, weight); });
  auto out = step(qkv, w);
  if (compiled) *compiled = step.stats().last_ir;
  return out;
}

V attention_inputs(const AttentionCase& c, rt::Dtype dtype, rt::Device device) {
  return {to_array(random_ref({2, 3, c.sq, c.d}, 11), dtype, device),
          to_array(random_ref({2, 3, c.sk, c.d}, 12), dtype, device),
          to_array(random_ref({2, 3, c.sk, c.dv}, 13), dtype, device)};
}

// The compute capability the compile said it built for ("... for sm_90: ...").
int compiled_sm(const std::string& ir) {
  size_t at = ir.find("for sm_");
  return at == std::string::npos ? 0 : std::atoi(ir.c_str() + at + 7);
}

// f16 and bf16 attention against the CPU device in f32 on the same
// (rounded) inputs, at the dtype's tolerance: the output and gradients are
// stored in the 16-bit type (relative error 2^-11 for f16, 2^-8 for bf16)
// and the softmax's probabilities enter the second product in it too.
// Where cuDNN validates the case for this GPU, the compile must say cuDNN
// ran both kernels; elsewhere (f16 attention under LOUPE_CUDNN=0, as the
// emulated runs have it) loupe's kernel runs them and the compile says why.
TEST(CudaGpu, HalfPrecisionAttentionAgreesWithTheCpuDevice) {
  REQUIRE_GPU();
  rt::Device d = rt::cuda(0);
  for (const AttentionCase& c :
       {AttentionCase{rt::f16, 128, 128, 64, 64, false}, AttentionCase{rt::bf16, 96, 160, 128, 128, true},
        AttentionCase{rt::f16, 100, 100, 32, 32, true}, AttentionCase{rt::bf16, 64, 80, 64, 32, false}}) {
    SCOPED_TRACE(fmt::format("{} sq {} sk {} d {} dv {}{}", rt::dtype_name(c.dtype), c.sq, c.sk, c.d, c.dv,
                             c.causal ? " causal" : ""));
    Array w = to_array(random_ref({2, 3, c.sq, c.dv}, 14), rt::f32, d);
    std::string ir;
    auto [loss, grads] = attention_step(c, attention_inputs(c, c.dtype, d), w, &ir);
    V rounded;
    for (const Array& x : attention_inputs(c, c.dtype, rt::cpu(0))) rounded.push_back(x.astype(rt::f32));
    auto [want_loss, want] = attention_step(c, rounded, rt::to_device(w, rt::cpu(0)), nullptr);
    const double tol = c.dtype == rt::f16 ? 1e-2 : 4e-2;
    EXPECT_NEAR(loss.item<double>(), want_loss.item<double>(), tol * (std::fabs(want_loss.item<double>()) + 1));
    for (size_t i = 0; i < 3; ++i) {
      Ref ref = to_ref(want[i]);
      double scale = 0;
      for (double v : ref.v) scale = std::max(scale, std::fabs(v));
      EXPECT_TRUE(close(grads[i].astype(rt::f32), ref, tol, tol * scale)) << "gradient " << i;
    }
    rt::exec::AttentionKernel k{.dtype = c.dtype,
                                .batch = 6,
                                .sq = c.sq,
                                .sk = c.sk,
                                .d = c.d,
                                .dv = c.dv,
                                .causal = c.causal,
                                .scale = float(1 / std::sqrt(double(c.d)))};
    const int sm = compiled_sm(ir);
    const bool cudnn = !rt::backend::cuda::cudnn_switched_off() &&
                       rt::backend::cuda::cudnn_attention_rejects(k, true, sm).empty() &&
                       rt::backend::cuda::cudnn_attention_rejects(k, false, sm).empty();
    EXPECT_NE(ir.find(cudnn ? ", 2 cuDNN" : ", 0 cuDNN"), std::string::npos) << ir;
    if (!cudnn) {
      EXPECT_NE(ir.find("attention on loupe's kernel: "), std::string::npos) << ir;
    }
  }
}

// With a cuDNN that loads but cannot start (the emulated stack has no
// driver; ctest's emulated.*.cudnn_on run leaves cuDNN on), attention runs
// on loupe's kernel, right, and the user is told once, not per kernel.
TEST(CudaGpu, CudnnThatCannotStartFallsBackWithOneMessage) {
  REQUIRE_GPU();
  if (rt::backend::cuda::cudnn_switched_off()) GTEST_SKIP() << "cuDNN is switched off (LOUPE_CUDNN=0)";
  rt::Device d = rt::cuda(0);
  testing::internal::CaptureStderr();
  std::string ir;
  for (const AttentionCase& c :
       {AttentionCase{rt::f16, 64, 64, 32, 32, false}, AttentionCase{rt::bf16, 48, 80, 64, 64, true}}) {
    Array w = to_array(random_ref({2, 3, c.sq, c.dv}, 14), rt::f32, d);
    auto [loss, grads] = attention_step(c, attention_inputs(c, c.dtype, d), w, &ir);
    V rounded;
    for (const Array& x : attention_inputs(c, c.dtype, rt::cpu(0))) rounded.push_back(x.astype(rt::f32));
    auto [want_loss, want] = attention_step(c, rounded, rt::to_device(w, rt::cpu(0)), nullptr);
    EXPECT_NEAR(loss.item<double>(), want_loss.item<double>(), 4e-2 * (std::fabs(want_loss.item<double>()) + 1));
  }
  std::string err = testing::internal::GetCapturedStderr();
  if (ir.find(", 2 cuDNN") != std::string::npos) GTEST_SKIP() << "cuDNN runs on this GPU";
  const std::string said = "loupe: cuDNN's fused attention is not used (";
  size_t first = err.find(said);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(said, first + 1), std::string::npos) << "said more than once:\n" << err;
  EXPECT_NE(ir.find(", 0 cuDNN"), std::string::npos) << ir;
  EXPECT_NE(ir.find("attention on loupe's kernel: cudnnCreate failed"), std::string::npos) << ir;
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

// CUPTI over many captures in one process, on a real GPU: kept on between
// them, it loses no kernel or copy of a capture (each launch in a trace has
// its device rows) and lets in none made between captures (each device row
// links to a launch of the same trace); the activity buffers are reused,
// not allocated anew for each capture.
TEST(CudaGpu, ManyCapturesLoseNoRecordAndLeakNoBuffer) {
  REQUIRE_GPU();
  const char* env = std::getenv("LOUPE_CUPTI");
  if (env != nullptr && std::strcmp(env, "0") == 0) GTEST_SKIP() << "CUPTI is off (LOUPE_CUPTI=0)";
  rt::Device d = rt::cuda(0);
  TempDir dir;
  Array x = to_array(random_ref({256, 512}, 1), rt::f32, d), w = to_array(random_ref({512, 256}, 2), rt::f32, d);
  auto step = rt::jit("step", [](Array a, Array b) { return rt::sum(rt::relu(rt::matmul(a, b)) * 2.0); });
  step(x, w).item<float>();  // compiled outside the captures
  const prof::CuptiStats before = prof::CuptiCollector::stats();
  prof::CuptiStats after_five;
  size_t first_launches = 0;
  for (int i = 0; i < 25; ++i) {
    step(x, w).item<float>();  // between captures: recorded by CUPTI, dropped
    std::string path = dir.file(fmt::format("c{}.db", i));
    {
      prof::Capture capture({.path = path});
      for (int k = 0; k < 2; ++k) step(x, w).item<float>();
      rt::synchronize(d);
      capture.stop();
    }
    prof::TraceModel m = prof::load_trace(path);
    std::set<uint64_t> launched, ran;
    for (const auto& l : m.launches)
      for (size_t j = 0; j < l.size(); ++j) launched.insert(l.correlation[j]);
    for (const auto& ops : m.device_ops)
      for (size_t j = 0; j < ops.size(); ++j) ran.insert(ops.correlation[j]);
    EXPECT_EQ(ran, launched) << "capture " << i << ": every launch has its device rows, and no others";
    if (i == 0) first_launches = launched.size();
    EXPECT_EQ(launched.size(), first_launches) << "capture " << i << " ran what the first ran";
    if (i == 4) after_five = prof::CuptiCollector::stats();
  }
  EXPECT_GT(first_launches, 0u);
  const prof::CuptiStats s = prof::CuptiCollector::stats();
  EXPECT_LE(s.times_switched_on, std::max<uint64_t>(before.times_switched_on, 1)) << "switched on once";
  EXPECT_GE(s.records_dropped - before.records_dropped, 25u) << "the steps between captures were dropped";
  // CUPTI may ask for a buffer or two more under load, but the count does
  // not grow with the captures.
  EXPECT_LE(s.buffers_allocated, after_five.buffers_allocated + 2);
  EXPECT_LE(s.buffers_live, s.buffers_allocated);
}

}  // namespace
}  // namespace loupe::test
