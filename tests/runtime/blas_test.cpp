// The CPU device's BLAS runs the kernels this CPU's instruction set calls
// for, whatever OpenBLAS's table of CPU models knows. The CPU's features are
// checked against the kernel's own reading of them, /proc/cpuinfo's flags.
#include "backend/cpu/blas.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace loupe::rt::backend::cpu {
namespace {

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  return flags;
}

TEST(CpuBlas, CoreTypesFollowTheInstructionSet) {
  EXPECT_EQ(core_for_features({.avx = true, .avx2 = true, .fma = true, .avx512 = true}), "SkylakeX");
  EXPECT_EQ(core_for_features({.avx = true, .avx2 = true, .fma = true, .avx512 = true, .avx512_bf16 = true}),
            "Cooperlake");
  EXPECT_EQ(core_for_features({.avx = true, .avx2 = true, .fma = true}), "Haswell");
  EXPECT_EQ(core_for_features({.avx = true, .avx2 = true}), "Sandybridge");  // AVX2 without FMA: no Haswell kernels
  EXPECT_EQ(core_for_features({.avx = true}), "Sandybridge");
  EXPECT_EQ(core_for_features({}), "");
  EXPECT_EQ(kernel_level("Prescott"), 1);
  EXPECT_EQ(kernel_level("Zen"), 3);
  EXPECT_EQ(kernel_level("SkylakeX"), 4);
  EXPECT_EQ(kernel_level("NoSuchCore"), 0);
}

TEST(CpuBlas, FeaturesAreThoseTheKernelReports) {
  std::set<std::string> flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no flags in /proc/cpuinfo";
  CpuFeatures f = cpu_features();
  EXPECT_EQ(f.avx, flags.count("avx") > 0);
  EXPECT_EQ(f.avx2, flags.count("avx2") > 0);
  EXPECT_EQ(f.fma, flags.count("fma") > 0);
  bool avx512 = flags.count("avx512f") && flags.count("avx512cd") && flags.count("avx512bw") &&
                flags.count("avx512dq") && flags.count("avx512vl");
  EXPECT_EQ(f.avx512, avx512);
}

// OPENBLAS_CORETYPE is the user's to set, and wins; the test takes it out
// while this process loads OpenBLAS (ctest runs each test in a process of
// its own, so nothing loaded it before).
TEST(CpuBlas, TheKernelsInUseAreTheBestThisCpuRuns) {
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  const std::string user = env ? env : "";
  if (env) ::unsetenv("OPENBLAS_CORETYPE");
  const Blas& b = blas();
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr) << "the environment is left as it was";
  if (!user.empty()) ::setenv("OPENBLAS_CORETYPE", user.c_str(), 1);
  EXPECT_EQ(b.library.rfind("OpenBLAS ", 0), 0u) << b.library;
  if (b.chosen.rfind("OPENBLAS_CORETYPE=", 0) == 0) {
    GTEST_SKIP() << "an earlier test loaded OpenBLAS with " << b.chosen << ": run this test alone";
  }
  CpuFeatures f = cpu_features();
  EXPECT_EQ(kernel_level(b.kernels), feature_level(f)) << b.description();
  if (f.avx2 && f.fma) {
    EXPECT_NE(b.kernels, "Prescott") << "the generic kernels on a CPU with AVX2";
  }
  EXPECT_EQ(b.chosen, core_for_features(f).empty() ? "OpenBLAS's own choice" : "from the CPU's features");
}

}  // namespace
}  // namespace loupe::rt::backend::cpu
