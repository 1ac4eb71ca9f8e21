// NVRTC compiles every kernel the CUDA device would generate for the test
// programs (the MLP training step, attention forward and backward, fused
// and naive, reductions, layout kernels, random numbers, 16-bit floats)
// and a program using every instruction, to CUBINs for the GPUs of this
// project and to PTX for a GPU newer than the toolkit. NVRTC is a compiler
// library: this runs without a GPU or driver.
#include <gtest/gtest.h>

#include <set>

#include "backend/cuda/kernel_plan.h"
#include "backend/cuda/nvrtc_compiler.h"
#include "compile/program_builder.h"
#include "lowered.h"

namespace loupe::test {
namespace {

namespace cuda = rt::backend::cuda;
using rt::exec::Code;
using rt::exec::RegClass;

cuda::Nvrtc& nvrtc() {
  std::string why;
  if (!cuda::Nvrtc::available(&why)) ADD_FAILURE() << why;
  return cuda::Nvrtc::get();
}

// Compiles each distinct source of `p` for `arch` (to PTX when `ptx`);
// returns how many.
size_t compile_all(const Program& p, int arch, bool ptx = false) {
  std::set<std::string> seen;
  for (const auto& step : p.exe->steps) {
    cuda::KernelPlan plan = cuda::plan_kernel(*step.spec);
    if (plan.source.empty() || !seen.insert(plan.source).second) continue;
    try {
      cuda::CompiledKernel k = nvrtc().compile(plan.source, arch, step.spec->name, ptx);
      EXPECT_FALSE(k.image.empty()) << p.name << ": " << step.spec->name;
      EXPECT_EQ(k.cubin, !ptx);
      EXPECT_TRUE(k.log.empty()) << p.name << ": " << step.spec->name << " compiled with messages:\n"
                                 << k.log << "\n"
                                 << plan.source;
    } catch (const std::exception& e) {
      ADD_FAILURE() << p.name << ": " << e.what() << "\n" << plan.source;
    }
  }
  std::printf("%s: %zu kernels, %zu distinct sources compiled for %s_%d\n", p.name.c_str(), p.exe->steps.size(),
              seen.size(), ptx ? "compute" : "sm", arch);
  return seen.size();
}

TEST(Nvrtc, CompilesWithoutAGpu) {
  cuda::CompiledKernel k = nvrtc().compile(cuda::prelude() + R"(
extern "C" __global__ void k(float* x) { x[threadIdx.x] = lp_h2f(lp_f2h(x[threadIdx.x])); }
)",
                                           90, "probe");
  EXPECT_TRUE(k.cubin);
  EXPECT_EQ(k.target, "sm_90");
  EXPECT_EQ(k.image.compare(0, 4,
                            "\x7f"
                            "ELF"),
            0)
      << "a CUBIN is an ELF image";
  EXPECT_GT(k.compile_ns, 0);
  auto archs = nvrtc().architectures();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 80), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
}

TEST(Nvrtc, NewerGpusGetPtx) {
  int newest = nvrtc().architectures().back();
  cuda::CompiledKernel k = nvrtc().compile(cuda::prelude() + "extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n",
                                           newest + 1, "probe");
  EXPECT_FALSE(k.cubin);
  EXPECT_EQ(k.target, "compute_" + std::to_string(newest));
  EXPECT_NE(k.image.find(".target sm_" + std::to_string(newest)), std::string::npos);
}

TEST(Nvrtc, ErrorsCarryTheLog) {
  try {
    nvrtc().compile("extern \"C\" __global__ void k() { undeclared(); }", 90, "broken");
    FAIL() << "a broken source compiled";
  } catch (const rt::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("undeclared"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("broken"), std::string::npos) << e.what();
  }
}

TEST(Nvrtc, CompilesTheMlpTrainingStep) {
  Program p = mlp_step();
  // The step's fused kernels (27 with its 8 matrix products, docs/runtime.md),
  // to CUBINs and to PTX.
  EXPECT_GE(compile_all(p, 90), 10u);
  EXPECT_GE(compile_all(p, 80, true), 10u);
}

TEST(Nvrtc, CompilesAttention) {
  for (bool causal : {false, true}) {
    EXPECT_GE(compile_all(attention_grad(rt::AttentionImpl::fused, causal), 90), 2u);
    EXPECT_GE(compile_all(attention_grad(rt::AttentionImpl::naive, causal), 90), 2u);
  }
  compile_all(attention_grad(rt::AttentionImpl::fused, true, rt::f16), 80);
  compile_all(attention_grad(rt::AttentionImpl::fused, false, rt::bf16), 90);
}

TEST(Nvrtc, CompilesReductionsAndLayoutKernels) {
  EXPECT_GE(compile_all(reductions(), 90), 8u);
  EXPECT_EQ(compile_all(column_sum(), 80), 1u);
  EXPECT_GE(compile_all(odds_and_ends(), 90), 8u);
}

// A register program with every instruction the compiler can emit.
TEST(Nvrtc, CompilesEveryInstruction) {
  rt::compile::ProgramBuilder b({4, 8});
  int x = b.load(0, rt::f32, {0, {8, 1}});
  int y = b.load(1, rt::f16, {0, {0, 1}});
  int z = b.load(2, rt::bf16, {0, {1, 0}});
  int i = b.load(3, rt::i32, {0, {8, 1}});
  int j = b.load(4, rt::i64, {0, {0, 0}});
  int c = b.load(5, rt::boolean, {0, {8, 1}});
  int f = x;
  for (Code code : {Code::neg, Code::exp, Code::log, Code::tanh, Code::sqrt, Code::rsqrt, Code::relu, Code::gelu,
                    Code::sigmoid, Code::abs, Code::round_f16, Code::round_bf16, Code::rcp})
    f = b.op(code, RegClass::f, f);
  for (Code code : {Code::add, Code::sub, Code::mul, Code::div, Code::pow, Code::max, Code::min})
    f = b.op(code, RegClass::f, f, y);
  for (Code code : {Code::add_imm, Code::mul_imm, Code::sub_imm, Code::rsub_imm, Code::div_imm, Code::rdiv_imm,
                    Code::max_imm, Code::min_imm})
    f = b.op_imm(code, RegClass::f, f, -1, 0.5);
  int k = i;
  for (Code code : {Code::eq, Code::ne, Code::lt, Code::le, Code::gt, Code::ge})
    k = b.op(Code::iadd, RegClass::i, k, b.op(code, RegClass::i, f, z));
  for (Code code : {Code::eq_imm, Code::ne_imm, Code::lt_imm, Code::le_imm, Code::gt_imm, Code::ge_imm})
    k = b.op(Code::iadd, RegClass::i, k, b.op_imm(code, RegClass::i, f, -1, 1.5));
  f = b.op_imm(Code::where_f_imm_b, RegClass::f, c, f, -2.0);
  f = b.op_imm(Code::where_f_imm_a, RegClass::f, c, f, 3.0);
  for (Code code : {Code::ineg, Code::iabs, Code::irelu, Code::inot, Code::wrap_i32, Code::to_bool})
    k = b.op(code, RegClass::i, k);
  for (Code code : {Code::iadd, Code::isub, Code::imul, Code::idiv, Code::imax, Code::imin, Code::iand, Code::ior,
                    Code::ieq, Code::ine, Code::ilt, Code::ile, Code::igt, Code::ige})
    k = b.op(code, RegClass::i, k, j);
  f = b.op(Code::where_f, RegClass::f, c, f, b.constant(RegClass::f, 7));
  k = b.op(Code::where_i, RegClass::i, c, k, b.constant(RegClass::i, -7));
  k = b.op(Code::iadd, RegClass::i, k, b.op(Code::f_to_i, RegClass::i, f));
  k = b.op(Code::iadd, RegClass::i, k, b.op(Code::f_to_bool, RegClass::i, f));
  f = b.op(Code::add, RegClass::f, f, b.op(Code::i_to_f, RegClass::f, k));
  k = b.op(Code::iadd, RegClass::i, k, b.iota(8, 4));
  int bits = b.op(Code::rand_bits, RegClass::i, j);
  f = b.op(Code::add, RegClass::f, f, b.op(Code::rand_uniform, RegClass::f, j));
  f = b.op(Code::add, RegClass::f, f, b.op(Code::rand_normal, RegClass::f, j));
  b.store(f, 6, rt::f32);
  b.store(k, 7, rt::i32);
  b.store(bits, 8, rt::i64);
  b.store(f, 9, rt::f16);
  b.store(f, 10, rt::bf16);
  b.store(k, 11, rt::boolean);
  rt::exec::FusedKernel fk = b.finish();
  cuda::KernelPlan plan = cuda::plan_fused(fk);
  for (int arch : {80, 90}) {
    cuda::CompiledKernel out = nvrtc().compile(plan.source, arch, "every_instruction");
    EXPECT_TRUE(out.log.empty()) << out.log << "\n" << plan.source;
  }
}

}  // namespace
}  // namespace loupe::test
