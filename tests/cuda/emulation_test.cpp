// What the CUDA device's generated kernels compute, checked without a GPU:
// every kernel of the test programs (the MLP training step, attention
// forward and backward, reductions, layout kernels, random numbers, 16-bit
// floats), run by the emulator (emulator.h) on random inputs, against the
// CPU device's kernels on the same inputs. Grids are cut to a few blocks so
// that the grid-stride loops go round. Matrix products go to cuBLAS on the
// GPU and are not here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/cpu/fast_math.h"
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernel_plan.h"
#include "emulator.h"
#include "lowered.h"
#include "profiler/test_files.h"

namespace loupe::test {
namespace {

namespace cuda = rt::backend::cuda;
namespace cpu = rt::backend::cpu;
using rt::Dtype;
using rt::exec::KernelSpec;

// The element type of each of a kernel's buffers (inputs then outputs).
std::vector<Dtype> buffer_dtypes(const KernelSpec& spec, size_t n) {
  std::vector<Dtype> t(n, Dtype::f32);
  std::visit(
      [&](const auto& k) {
        using K = std::decay_t<decltype(k)>;
        if constexpr (std::is_same_v<K, rt::exec::FusedKernel>) {
          for (const auto& l : k.loads) t[size_t(l.arg)] = l.dtype;
          for (const auto& s : k.stores) t[size_t(s.out)] = s.dtype;
          if (k.reduce)
            t[size_t(k.reduce->out)] = k.reduce->kind == rt::exec::ReduceKind::argmax ? Dtype::i32 : k.reduce->dtype;
        } else if constexpr (std::is_same_v<K, rt::exec::GatherKernel>) {
          t = {k.dtype, k.index_dtype, k.dtype};
        } else if constexpr (std::is_same_v<K, rt::exec::ScatterAddKernel>) {
          t = {k.index_dtype, k.dtype, k.dtype};
        } else if constexpr (std::is_same_v<K, rt::exec::AttentionKernel>) {
          t.assign(n, k.dtype);
        } else if constexpr (std::is_same_v<K, rt::exec::AttentionBwdKernel>) {
          t.assign(n, k.fwd.dtype);
        } else if constexpr (!std::is_same_v<K, rt::exec::MatmulKernel>) {
          t.assign(n, k.dtype);
        }
      },
      spec.body);
  return t;
}

// An element of a buffer, at an address that may not be aligned for it.
template <typename T>
void store(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void fill(std::vector<char>& buf, Dtype d, std::mt19937& gen) {
  std::uniform_real_distribution<float> f(-2.0f, 2.0f);
  std::uniform_int_distribution<int> i(0, 7);
  size_t n = buf.size() / rt::itemsize(d);
  for (size_t k = 0; k < n; ++k) {
    char* p = buf.data() + k * rt::itemsize(d);
    switch (d) {
      case Dtype::f32: store(p, f(gen)); break;
      case Dtype::f16: store(p, cpu::float_to_half(f(gen))); break;
      case Dtype::bf16: store(p, cpu::float_to_bfloat(f(gen))); break;
      case Dtype::i32: store(p, int32_t(i(gen))); break;
      case Dtype::i64: store(p, int64_t(i(gen))); break;
      case Dtype::boolean: *p = char(i(gen) & 1); break;
    }
  }
}

double value(const std::vector<char>& buf, Dtype d, size_t k) {
  const char* p = buf.data() + k * rt::itemsize(d);
  switch (d) {
    case Dtype::f32: return load<float>(p);
    case Dtype::f16: return cpu::half_to_float(load<uint16_t>(p));
    case Dtype::bf16: return cpu::bfloat_to_float(load<uint16_t>(p));
    case Dtype::i32: return load<int32_t>(p);
    case Dtype::i64: return double(load<int64_t>(p));
    case Dtype::boolean: return *p != 0;
  }
  return 0;
}

struct Tolerance {
  double rtol = 2e-5, atol = 2e-6;
};

// Runs each non-matmul kernel of `p` both ways; returns how many ran.
size_t check_program(const Program& p, const std::string& dir, Tolerance tol = {}) {
  cpu::init_kernels();
  struct Case {
    const rt::compile::Executable::Step* step;
    cuda::KernelPlan plan;
  };
  std::vector<Case> cases;
  std::vector<std::string> sources;
  std::vector<std::vector<std::string>> entries;
  for (const auto& step : p.exe->steps) {
    cuda::KernelPlan plan = cuda::plan_kernel(*step.spec);
    if (plan.source.empty() && plan.steps.empty()) continue;  // cuBLAS
    sources.push_back(plan.source.empty() ? "" : plan.source);
    std::vector<std::string> names;
    for (const auto& s : plan.steps)
      if (s.kind == cuda::PlanStep::Kind::launch) names.push_back(s.entry);
    entries.push_back(names);
    cases.push_back({&step, std::move(plan)});
  }
  emu::Module module(sources, entries, dir);
  std::mt19937 gen(42);
  for (size_t c = 0; c < cases.size(); ++c) {
    const auto& step = *cases[c].step;
    const cuda::KernelPlan& plan = cases[c].plan;
    const std::string what = p.name + " kernel " + std::to_string(c) + " " + step.spec->name;
    const size_t n = step.slots.size();
    std::vector<Dtype> dt = buffer_dtypes(*step.spec, n);
    std::vector<std::vector<char>> ref(n), got(n);
    for (size_t b = 0; b < n; ++b) {
      ref[b].assign(size_t(p.exe->slots[size_t(step.slots[b])].bytes), 0);
      if (b + size_t(step.outputs) < n) fill(ref[b], dt[b], gen);
      else std::memset(ref[b].data(), 0x5a, ref[b].size());  // outputs start as garbage
      got[b] = ref[b];
    }
    std::vector<void*> rp(n), gp(n);
    for (size_t b = 0; b < n; ++b) {
      rp[b] = ref[b].data();
      gp[b] = got[b].data();
    }
    cpu::run_kernel(*step.spec, rp);
    std::vector<char> scratch(plan.scratch_bytes, 0x5a);
    if (plan.scratch_bytes) gp.push_back(scratch.data());
    for (const cuda::PlanStep& s : plan.steps) {
      if (s.kind == cuda::PlanStep::Kind::zero) {
        std::memset(gp.at(size_t(s.buffer)), 0, s.bytes);
        continue;
      }
      emu::Launch l{&module.context(), module.entry(c, s.entry), {}};
      for (int a : s.args) l.args.push_back(gp.at(size_t(a)));
      // Few blocks, so that grid-stride loops (over elements, outputs or
      // batches) take several turns.
      unsigned blocks = unsigned(std::min<int64_t>(s.blocks, s.grid_stride ? 3 : s.blocks));
      emu::launch(l, {blocks, std::min(s.grid_y, 2u), 1}, {s.block, 1, 1});
    }
    for (size_t b = n - size_t(step.outputs); b < n; ++b) {
      size_t count = ref[b].size() / rt::itemsize(dt[b]);
      size_t bad = 0;
      for (size_t k = 0; k < count; ++k) {
        double w = value(ref[b], dt[b], k), g = value(got[b], dt[b], k);
        if (std::isnan(w) && std::isnan(g)) continue;
        if (std::isinf(w) && g == w) continue;
        if (std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w)) continue;
        if (bad++ < 3)
          ADD_FAILURE() << what << ", output " << b << " element " << k << " of " << count << ": got " << g
                        << ", CPU device " << w;
      }
      EXPECT_EQ(bad, 0u) << what << ", output " << b;
    }
  }
  return cases.size();
}

class Emulation : public ::testing::Test {
 protected:
  TempDir dir;
};

TEST_F(Emulation, MlpTrainingStep) { EXPECT_GE(check_program(mlp_step(64), dir.path().string()), 15u); }

TEST_F(Emulation, Reductions) {
  EXPECT_GE(check_program(reductions(), dir.path().string()), 8u);
  EXPECT_EQ(check_program(column_sum(), dir.path().string()), 1u);
}

TEST_F(Emulation, LayoutRandomAndSixteenBitKernels) {
  // f16 and bf16 results may round the other way when CUDA's and the CPU
  // device's transcendentals differ in their last bit.
  EXPECT_GE(check_program(odds_and_ends(), dir.path().string(), {1e-2, 1e-5}), 8u);
}

TEST_F(Emulation, FusedAttentionForwardAndBackward) {
  for (bool causal : {false, true}) {
    // Per-key rescaling here, per-block on the CPU device: the same sums in
    // another order.
    EXPECT_GE(check_program(attention_grad(rt::AttentionImpl::fused, causal), dir.path().string(), {1e-4, 1e-5}), 2u);
  }
}

TEST_F(Emulation, NaiveAttention) {
  EXPECT_GE(check_program(attention_grad(rt::AttentionImpl::naive, true), dir.path().string(), {1e-4, 1e-5}), 2u);
}

}  // namespace
}  // namespace loupe::test
