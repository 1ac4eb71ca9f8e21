// NVRTC: CUDA C++ source to a CUBIN for the device's architecture (or PTX
// for the newest virtual architecture NVRTC knows, when the GPU is newer
// than the toolkit; the driver then finishes the job). NVRTC is a compiler
// library: it needs neither a GPU nor a driver, which is how the tests
// compile every generated kernel on machines without either.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loupe::rt::backend::cuda {

struct CompiledKernel {
  std::string image;  // CUBIN bytes, or PTX text ending in a NUL
  bool cubin = false;
  std::string target;  // "sm_90" or "compute_90"
  std::string log;     // NVRTC's messages (warnings)
  int64_t compile_ns = 0;
};

class Nvrtc {
 public:
  // The process's NVRTC, loaded on first use. Throws RuntimeError saying
  // why when it cannot be loaded.
  static Nvrtc& get();
  // Whether NVRTC can be loaded; `why` says why not.
  static bool available(std::string* why);

  // Compiles `source` for compute capability `arch` (major * 10 + minor):
  // a CUBIN, or PTX when `ptx` (or when NVRTC does not know the GPU).
  // Throws RuntimeError with NVRTC's log on a compile error.
  CompiledKernel compile(const std::string& source, int arch, const std::string& name, bool ptx = false) const;

  // The real architectures NVRTC can generate code for.
  const std::vector<int>& architectures() const { return archs_; }
  std::string version() const;

  struct Api;

 private:
  Nvrtc();
  static Nvrtc* load();
  Api* api_;
  std::vector<int> archs_;
};

}  // namespace loupe::rt::backend::cuda
