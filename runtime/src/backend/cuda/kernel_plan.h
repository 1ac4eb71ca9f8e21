// What the CUDA device runs for a KernelSpec: CUDA C++ source generated
// from the spec (the fused kernels from the same register programs the CPU
// device interprets), and the launches and zero-fills that run it.
//
// Plain text and numbers: nothing here needs the CUDA toolkit, so the
// generator and its tests build and run on any machine; the CUDA device
// compiles the source with NVRTC (nvrtc_compiler.h). Matmuls have no source:
// they go to cuBLAS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exec/kernel_spec.h"

namespace loupe::rt::backend::cuda {

// Buffer numbers in a plan count the kernel's buffers (inputs then
// outputs) and then, when the plan asks for one, a scratch buffer.
struct PlanStep {
  enum class Kind : uint8_t { launch, zero };
  Kind kind = Kind::launch;

  // launch: `entry` of the source, with the buffers `args` as its
  // parameters (device pointers, in order).
  std::string entry;
  std::vector<int> args;
  uint32_t block = 256;
  // Blocks wanted along x. A grid-stride kernel is correct with any number
  // of blocks: the device caps it at what fills the GPU.
  int64_t blocks = 1;
  bool grid_stride = true;
  uint32_t grid_y = 1;

  // zero: `bytes` of buffer `buffer` set to zero.
  int buffer = -1;
  size_t bytes = 0;
};

struct KernelPlan {
  std::string source;  // one translation unit; empty for cuBLAS matmuls
  std::vector<PlanStep> steps;
  size_t scratch_bytes = 0;  // 0: no scratch buffer
  int buffers = 0;           // the kernel's own buffers (inputs and outputs)
};

// The plan for `spec`. Throws RuntimeError for a spec it cannot run.
KernelPlan plan_kernel(const exec::KernelSpec& spec);

// Parts, exposed for the tests.
KernelPlan plan_fused(const exec::FusedKernel& k);
// The device functions every generated source starts with: 16-bit float
// conversions and the counter-based random numbers, bit for bit those of
// the CPU device.
const std::string& prelude();

// Text helpers shared by the generators.
std::string float_literal(double v);  // as the CPU device rounds an immediate: float(v)
std::string int_literal(int64_t v);

}  // namespace loupe::rt::backend::cuda
