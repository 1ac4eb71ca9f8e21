// The CUDA C++ the CUDA device generates from kernel specs: what the source
// of a few fusion groups says, and that every kernel of the test programs
// gets a plan. Plain text: runs on any machine, CUDA toolkit or not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "backend/cuda/kernel_plan.h"
#include "compile/program_builder.h"
#include "lowered.h"

namespace loupe::test {
namespace {

namespace cuda = rt::backend::cuda;
using rt::exec::FusedKernel;
using rt::exec::KernelSpec;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The generated kernel without the shared prelude.
std::string body(const cuda::KernelPlan& p) {
  EXPECT_EQ(p.source.rfind(cuda::prelude(), 0), 0u) << "every source starts with the prelude";
  return p.source.substr(cuda::prelude().size());
}

std::vector<const FusedKernel*> fused_of(const Program& p) {
  std::vector<const FusedKernel*> out;
  for (const auto& step : p.exe->steps)
    if (const auto* f = std::get_if<FusedKernel>(&step.spec->body)) out.push_back(f);
  return out;
}

TEST(CudaCodegen, LiteralsRoundTrip) {
  EXPECT_EQ(cuda::float_literal(1.0), "1.000000000e+00f");
  EXPECT_EQ(cuda::float_literal(0.1), "1.000000015e-01f");  // float(0.1), as the CPU device rounds it
  EXPECT_EQ(std::stof(cuda::float_literal(1e-30)), 1e-30f);
  EXPECT_EQ(cuda::float_literal(INFINITY), "__uint_as_float(0x7f800000u)");
  EXPECT_EQ(cuda::float_literal(-INFINITY), "__uint_as_float(0xff800000u)");
  EXPECT_EQ(cuda::float_literal(NAN), "__uint_as_float(0x7fc00000u)");
  EXPECT_EQ(cuda::int_literal(42), "42ll");
  EXPECT_EQ(cuda::int_literal(INT64_MIN), "((i64)0x8000000000000000ull)");
  EXPECT_EQ(cuda::int_literal(-1), "((i64)0xffffffffffffffffull)");
}

TEST(CudaCodegen, ElementwiseKernelInFull) {
  auto exe = lower_function("add_one", [](const V& v) { return V{v[0] + 1.0}; }, {{{1000}}});
  ASSERT_EQ(exe->steps.size(), 1u);
  cuda::KernelPlan p = cuda::plan_kernel(*exe->steps[0].spec);
  EXPECT_EQ(body(p), R"(
extern "C" __global__ void __launch_bounds__(256) loupe_fused(void* __restrict__ p0, void* __restrict__ p1) {
  typedef int idx_t;
  float f0 = 0.0f;
  const idx_t total = 1000;
  for (idx_t lin = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; lin < total; lin += (idx_t)gridDim.x * blockDim.x) {
    f0 = ((const float*)p0)[lin];
    f0 = f0 + 1.000000000e+00f;
    ((float*)p1)[lin] = f0;
  }
}
)");
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].entry, "loupe_fused");
  EXPECT_EQ(p.steps[0].args, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.steps[0].block, 256u);
  EXPECT_EQ(p.steps[0].blocks, 4);
  EXPECT_TRUE(p.steps[0].grid_stride);
  EXPECT_EQ(p.buffers, 2);
}

TEST(CudaCodegen, BroadcastOperandIsAStridedLoad) {
  // relu(x * 2 + b): b [32] broadcast over x [64, 32]'s rows.
  auto exe =
      lower_function("bias_relu", [](const V& v) { return V{rt::relu(v[0] * 2.0 + v[1])}; }, {{{64, 32}}, {{32}}});
  ASSERT_EQ(exe->steps.size(), 1u);
  std::string src = body(cuda::plan_kernel(*exe->steps[0].spec));
  EXPECT_TRUE(has(src, "const idx_t total = 2048;")) << src;
  EXPECT_TRUE(has(src, "const idx_t x1 = t_ % 32;")) << src;
  EXPECT_TRUE(has(src, "((const float*)p0)[lin]")) << src;     // x: contiguous
  EXPECT_TRUE(has(src, "((const float*)p1)[0 + x1]")) << src;  // b: along the columns only
  EXPECT_TRUE(has(src, "* 2.000000000e+00f;")) << src;
  EXPECT_TRUE(has(src, "> 0.0f ?")) << src;  // relu
  EXPECT_TRUE(has(src, "((float*)p2)[lin] =")) << src;
}

TEST(CudaCodegen, SoftmaxRowsReduceInSharedMemory) {
  auto exe = lower_function("softmax", [](const V& v) { return V{rt::softmax(v[0])}; }, {{{16, 40}}});
  bool max_seen = false, sum_seen = false;
  for (const auto& step : exe->steps) {
    std::string src = body(cuda::plan_kernel(*step.spec));
    if (!has(src, "red_")) continue;
    // One block per row; the threads stride along it and combine.
    EXPECT_TRUE(has(src, "for (idx_t o = blockIdx.x; o < outs; o += gridDim.x)")) << src;
    EXPECT_TRUE(has(src, "for (idx_t r = threadIdx.x; r < len; r += blockDim.x)")) << src;
    EXPECT_TRUE(has(src, "for (unsigned s = blockDim.x / 2; s > 0; s >>= 1)")) << src;
    if (has(src, "__shared__ float red_[64];")) {
      max_seen = true;
      EXPECT_TRUE(has(src, "acc = lp_max(")) << src;
      EXPECT_TRUE(has(src, "float acc = __uint_as_float(0xff800000u);")) << src;  // -inf
    }
    if (has(src, "__shared__ double red_[64];")) {
      sum_seen = true;  // float sums accumulate in double, as on the CPU device
      EXPECT_TRUE(has(src, "acc += (double)")) << src;
      EXPECT_TRUE(has(src, "expf(")) << src;  // the exp fused into the sum
    }
  }
  EXPECT_TRUE(max_seen);
  EXPECT_TRUE(sum_seen);
}

TEST(CudaCodegen, ManyOutputsReduceOnePerThread) {
  Program p = column_sum();
  auto fused = fused_of(p);
  ASSERT_EQ(fused.size(), 1u);
  cuda::KernelPlan plan = cuda::plan_fused(*fused[0]);
  std::string src = body(plan);
  EXPECT_TRUE(has(src, "for (idx_t r = 0; r < len; ++r)")) << src;
  EXPECT_FALSE(has(src, "__shared__")) << src;
  EXPECT_TRUE(has(src, "const idx_t outs = 40000, len = 8;")) << src;
  EXPECT_EQ(plan.steps[0].blocks, (40000 + 255) / 256);
}

TEST(CudaCodegen, ArgmaxKeepsTheFirstIndexOfTheMaximum) {
  auto exe = lower_function("argmax", [](const V& v) { return V{rt::argmax(v[0], 1)}; }, {{{8, 100}}});
  ASSERT_EQ(exe->steps.size(), 1u);
  std::string src = body(cuda::plan_kernel(*exe->steps[0].spec));
  EXPECT_TRUE(has(src, "__shared__ long long red_arg_[128];")) << src;
  EXPECT_TRUE(has(src, "if (v_ > acc || arg < 0) { acc = v_; arg = x1; }")) << src;
  EXPECT_TRUE(
      has(src, "(red_[threadIdx.x + s] == red_[threadIdx.x] && red_arg_[threadIdx.x + s] < red_arg_[threadIdx.x])"))
      << src;
  EXPECT_TRUE(has(src, "((int*)p1)[o] = (int)(red_arg_[0] > 0 ? red_arg_[0] : 0);")) << src;
}

TEST(CudaCodegen, HugeIterationSpacesIndexIn64Bits) {
  rt::compile::ProgramBuilder b({int64_t(3) << 30});
  int r = b.load(0, rt::f32, {0, {1}});
  b.store(b.op(rt::exec::Code::neg, rt::exec::RegClass::f, r), 1, rt::f32);
  FusedKernel k = b.finish();
  std::string src = body(cuda::plan_fused(k));
  EXPECT_TRUE(has(src, "typedef long long idx_t;")) << src;
  EXPECT_TRUE(has(src, "const idx_t total = 3221225472;")) << src;
}

TEST(CudaCodegen, SixteenBitFloatsRoundLikeTheCpuDevice) {
  auto exe = lower_function("half", [](const V& v) { return V{rt::astype(v[0], rt::f16) * rt::astype(v[0], rt::f16)}; },
                            {{{100}}});
  std::string all;
  for (const auto& step : exe->steps) all += body(cuda::plan_kernel(*step.spec));
  EXPECT_TRUE(has(all, "lp_h2f(lp_f2h(")) << all;                        // round_f16 between ops
  EXPECT_TRUE(has(all, "((unsigned short*)p1)[lin] = lp_f2h(")) << all;  // an f16 store
}

TEST(CudaCodegen, EveryKernelOfTheTestProgramsHasAPlan) {
  std::vector<Program> programs = {mlp_step(), attention_grad(rt::AttentionImpl::fused, true),
                                   attention_grad(rt::AttentionImpl::naive, false), reductions(), odds_and_ends()};
  size_t kernels = 0, cublas = 0;
  // LOUPE_DUMP_CUDA=DIR writes each source there, to read or compile by hand.
  const char* dump = std::getenv("LOUPE_DUMP_CUDA");
  for (const Program& p : programs) {
    for (const auto& step : p.exe->steps) {
      cuda::KernelPlan plan = cuda::plan_kernel(*step.spec);
      if (dump != nullptr && !plan.source.empty()) {
        std::ofstream(std::string(dump) + "/" + p.name + "-" + std::to_string(kernels) + ".cu") << plan.source;
      }
      ++kernels;
      if (plan.source.empty()) {
        EXPECT_TRUE(std::holds_alternative<rt::exec::MatmulKernel>(step.spec->body))
            << p.name << ": " << step.spec->name;
        ++cublas;
        continue;
      }
      EXPECT_FALSE(plan.steps.empty()) << p.name << ": " << step.spec->name;
      EXPECT_EQ(plan.buffers, int(step.slots.size())) << p.name << ": " << step.spec->name;
      for (const cuda::PlanStep& s : plan.steps) {
        if (s.kind == cuda::PlanStep::Kind::zero) continue;
        EXPECT_TRUE(has(plan.source, "__global__ void __launch_bounds__(") && has(plan.source, ") " + s.entry + "("))
            << p.name << ": " << step.spec->name;
        for (int a : s.args) EXPECT_LT(a, plan.buffers + (plan.scratch_bytes > 0 ? 1 : 0));
      }
    }
  }
  EXPECT_GT(kernels, 60u);
  EXPECT_GE(cublas, 6u);  // the MLP's forward and backward products at least
}

TEST(CudaCodegen, FusedAttentionIsAFlashStyleKernel) {
  Program p = attention_grad(rt::AttentionImpl::fused, true);
  bool fwd = false, bwd = false;
  for (const auto& step : p.exe->steps) {
    if (const auto* a = std::get_if<rt::exec::AttentionKernel>(&step.spec->body)) {
      cuda::KernelPlan plan = cuda::plan_kernel(*step.spec);
      fwd = true;
      EXPECT_EQ(a->d, 64);
      // Keys and values in shared-memory tiles, an online softmax per row:
      // nothing of size Sq x Sk.
      EXPECT_TRUE(has(plan.source, "__shared__ float ks[TILE * D];"));
      EXPECT_TRUE(has(plan.source, "const float corr = expf(m - s);"));
      EXPECT_TRUE(has(plan.source, "#define CAUSAL 1"));
      EXPECT_EQ(plan.steps[0].grid_y, 8u);  // batch 2 x heads 4
      EXPECT_EQ(plan.scratch_bytes, 0u);
    }
    if (std::holds_alternative<rt::exec::AttentionBwdKernel>(step.spec->body)) {
      cuda::KernelPlan plan = cuda::plan_kernel(*step.spec);
      bwd = true;
      ASSERT_EQ(plan.steps.size(), 2u);
      EXPECT_EQ(plan.steps[0].entry, "loupe_attention_bwd_q");
      EXPECT_EQ(plan.steps[1].entry, "loupe_attention_bwd_kv");
      EXPECT_EQ(plan.scratch_bytes, size_t(2 * 8 * 96 * 4));  // log-sum-exp and D per query row
    }
  }
  EXPECT_TRUE(fwd);
  EXPECT_TRUE(bwd);
}

}  // namespace
}  // namespace loupe::test
