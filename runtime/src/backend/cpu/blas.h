// The CPU device's BLAS: OpenBLAS, loaded at run time with the kernels the
// CPU's instruction set calls for.
//
// A DYNAMIC_ARCH OpenBLAS picks its kernels when it loads, from a table of
// CPU models; a model newer than the table gets an old generic set
// (OpenBLAS 0.3.21 runs SSE3 "Prescott" kernels on some AVX-512 Xeons, four
// times slower than its AVX-512 ones). OPENBLAS_CORETYPE overrides the
// choice, but only before the library loads, so the runtime loads it
// itself: it sets OPENBLAS_CORETYPE from the CPU's own feature bits (unless
// the user set it), opens the library, and restores the environment.
#pragma once

#include <cblas.h>

#include <string>

namespace loupe::rt::backend::cpu {

// What the CPU can run, from CPUID.
struct CpuFeatures {
  bool avx = false, avx2 = false, fma = false;
  bool avx512 = false;  // F, CD, BW, DQ and VL: what OpenBLAS's SkylakeX kernels use
  bool avx512_bf16 = false;
};
CpuFeatures cpu_features();

// OpenBLAS's core type for a CPU with `f`: SkylakeX (or Cooperlake with
// bf16) for AVX-512, Haswell for AVX2 with FMA, Sandybridge for AVX; ""
// for older CPUs, whose kernels OpenBLAS's own detection picks well.
std::string core_for_features(const CpuFeatures& f);

// The instruction set a core type's kernels use: 4 AVX-512, 3 AVX2, 2 AVX,
// 1 SSE (the generic and older sets), 0 a name this table lacks.
int kernel_level(const std::string& core);
// The same for a CPU: the best set it can run.
int feature_level(const CpuFeatures& f);

struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  void (*set_num_threads)(int) = nullptr;
  std::string library;  // "OpenBLAS 0.3.21"
  std::string kernels;  // its core type: "SkylakeX"
  std::string chosen;   // how: "from the CPU's features", "OPENBLAS_CORETYPE", ...
  // "OpenBLAS 0.3.21, SkylakeX kernels (from the CPU's features)".
  std::string description() const;
};

// The library, loaded on first use. Throws RuntimeError naming the library
// when it cannot be loaded.
const Blas& blas();

}  // namespace loupe::rt::backend::cpu
