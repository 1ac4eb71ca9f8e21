#include "backend/cpu/blas.h"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <string_view>

#include "backend/dynamic_library.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::backend::cpu {

CpuFeatures cpu_features() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
  return f;
}

std::string core_for_features(const CpuFeatures& f) {
  if (f.avx512) return f.avx512_bf16 ? "Cooperlake" : "SkylakeX";
  if (f.avx2 && f.fma) return "Haswell";
  if (f.avx) return "Sandybridge";
  return "";
}

int kernel_level(const std::string& core) {
  // OpenBLAS 0.3.21's x86-64 core types (driver/others/dynamic.c) by the
  // instruction set of their kernels.
  struct Level {
    std::string_view core;
    int level;
  };
  static constexpr std::array<Level, 26> kLevels = {{
      {"SkylakeX", 4},  {"Cooperlake", 4},  {"SapphireRapids", 4}, {"Haswell", 3},    {"Zen", 3},
      {"Excavator", 3}, {"Sandybridge", 2}, {"Bulldozer", 2},      {"Piledriver", 2}, {"Steamroller", 2},
      {"Prescott", 1},  {"Katmai", 1},      {"Coppermine", 1},     {"Northwood", 1},  {"Banias", 1},
      {"Atom", 1},      {"Core2", 1},       {"Penryn", 1},         {"Dunnington", 1}, {"Nehalem", 1},
      {"Athlon", 1},    {"Opteron", 1},     {"Opteron(SSE3)", 1},  {"Barcelona", 1},  {"Nano", 1},
      {"Bobcat", 1},
  }};
  for (const Level& l : kLevels) {
    if (l.core == core) return l.level;
  }
  return 0;
}

int feature_level(const CpuFeatures& f) {
  if (f.avx512) return 4;
  if (f.avx2 && f.fma) return 3;
  if (f.avx) return 2;
  return 1;
}

std::string Blas::description() const { return fmt::format("{}, {} kernels ({})", library, kernels, chosen); }

namespace {

// OPENBLAS_CORETYPE set for the library's load only: child processes and
// later loads see the environment as it was.
class CoreTypeForLoad {
 public:
  explicit CoreTypeForLoad(const std::string& core) {
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr || core.empty()) return;
    set_ = ::setenv("OPENBLAS_CORETYPE", core.c_str(), 0) == 0;
  }
  ~CoreTypeForLoad() {
    if (set_) ::unsetenv("OPENBLAS_CORETYPE");
  }
  CoreTypeForLoad(const CoreTypeForLoad&) = delete;
  CoreTypeForLoad& operator=(const CoreTypeForLoad&) = delete;

 private:
  bool set_ = false;
};

Blas load() {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const std::string wanted = core_for_features(cpu_features());
  static DynamicLibrary lib;  // never closed: its threads run until exit
  std::string why;
  bool opened = false;
  {
    CoreTypeForLoad env(wanted);
    opened = lib.open({"libopenblas.so.0", "libopenblas.so"}, &why);
  }
  if (!opened) {
    throw RuntimeError("the CPU device needs OpenBLAS (Debian's libopenblas0), which cannot be loaded: " + why);
  }
  Blas b;
  b.sgemm = lib.symbol<decltype(&cblas_sgemm)>("cblas_sgemm");
  b.set_num_threads = lib.symbol<void (*)(int)>("openblas_set_num_threads");
  std::string config = lib.symbol<char* (*)()>("openblas_get_config")();
  b.library = config.substr(0, config.find(' ', config.find(' ') + 1));  // "OpenBLAS 0.3.21"
  b.kernels = lib.symbol<char* (*)()>("openblas_get_corename")();
  if (user != nullptr) {
    b.chosen = fmt::format("OPENBLAS_CORETYPE={}", user);
  } else if (config.find("DYNAMIC_ARCH") == std::string::npos) {
    b.chosen = "a build for one CPU";
  } else if (wanted.empty()) {
    b.chosen = "OpenBLAS's own choice";
  } else if (b.kernels == wanted) {
    b.chosen = "from the CPU's features";
  } else {
    b.chosen = fmt::format("OpenBLAS was loaded before the runtime chose {}", wanted);
  }
  return b;
}

}  // namespace

const Blas& blas() {
  static const Blas b = load();
  return b;
}

}  // namespace loupe::rt::backend::cpu
