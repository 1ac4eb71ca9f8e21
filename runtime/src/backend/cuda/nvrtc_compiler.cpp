#include "backend/cuda/nvrtc_compiler.h"

#include <fmt/format.h>
#include <nvrtc.h>

#include <algorithm>
#include <mutex>

#include "backend/dynamic_library.h"
#include "loupe/prof/clock.h"
#include "loupe/rt/errors.h"

#ifndef LOUPE_CUDA_LIBRARY_DIR
#define LOUPE_CUDA_LIBRARY_DIR ""
#endif

namespace loupe::rt::backend::cuda {

// The NVRTC functions loupe calls, each as (member of Api, symbol): the
// member is declared and looked up from this one list.
#define LOUPE_NVRTC_FUNCTIONS(X)          \
  X(version, nvrtcVersion)                \
  X(error_string, nvrtcGetErrorString)    \
  X(create, nvrtcCreateProgram)           \
  X(destroy, nvrtcDestroyProgram)         \
  X(compile, nvrtcCompileProgram)         \
  X(log_size, nvrtcGetProgramLogSize)     \
  X(log, nvrtcGetProgramLog)              \
  X(cubin_size, nvrtcGetCUBINSize)        \
  X(cubin, nvrtcGetCUBIN)                 \
  X(ptx_size, nvrtcGetPTXSize)            \
  X(ptx, nvrtcGetPTX)                     \
  X(num_archs, nvrtcGetNumSupportedArchs) \
  X(archs, nvrtcGetSupportedArchs)

struct Nvrtc::Api {
  backend::DynamicLibrary lib;
#define LOUPE_NVRTC_MEMBER(member, fn) decltype(&fn) member;
  LOUPE_NVRTC_FUNCTIONS(LOUPE_NVRTC_MEMBER)
#undef LOUPE_NVRTC_MEMBER
};

namespace {

struct Loaded {
  std::once_flag once;
  Nvrtc* nvrtc = nullptr;
  std::string why;
};
Loaded& loaded() {
  static Loaded* l = new Loaded;
  return *l;
}

}  // namespace

Nvrtc* Nvrtc::load() {
  Loaded& l = loaded();
  std::call_once(l.once, [&] {
    try {
      l.nvrtc = new Nvrtc;
    } catch (const std::exception& e) {
      l.why = e.what();
    }
  });
  return l.nvrtc;
}

Nvrtc& Nvrtc::get() {
  if (load() == nullptr) throw RuntimeError(loaded().why);
  return *loaded().nvrtc;
}

bool Nvrtc::available(std::string* why) {
  bool ok = load() != nullptr;
  if (why) *why = loaded().why;
  return ok;
}

Nvrtc::Nvrtc() : api_(new Api) {
  std::string why;
  std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so"};
  if (*LOUPE_CUDA_LIBRARY_DIR) names.push_back(std::string(LOUPE_CUDA_LIBRARY_DIR) + "/libnvrtc.so");
  if (!api_->lib.open(names, &why)) throw RuntimeError("NVRTC (the CUDA runtime compiler) cannot be loaded: " + why);
  const backend::DynamicLibrary& lib = api_->lib;
#define LOUPE_NVRTC_LOOKUP(member, fn) api_->member = lib.symbol<decltype(&fn)>(#fn);
  LOUPE_NVRTC_FUNCTIONS(LOUPE_NVRTC_LOOKUP)
#undef LOUPE_NVRTC_LOOKUP
  int n = 0;
  if (api_->num_archs(&n) == NVRTC_SUCCESS && n > 0) {
    archs_.resize(size_t(n));
    if (api_->archs(archs_.data()) != NVRTC_SUCCESS) archs_.clear();
  }
  std::sort(archs_.begin(), archs_.end());
}

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  api_->version(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

CompiledKernel Nvrtc::compile(const std::string& source, int arch, const std::string& name, bool ptx) const {
  const Api& a = *api_;
  CompiledKernel out;
  // A real architecture NVRTC knows gives a CUBIN; a newer GPU gets PTX of
  // the newest virtual architecture not above it, for the driver to finish.
  bool known = std::find(archs_.begin(), archs_.end(), arch) != archs_.end();
  int target = arch;
  if (!known) {
    target = 0;
    for (int x : archs_)
      if (x <= arch) target = x;
    if (target == 0)
      throw RuntimeError(
          fmt::format("NVRTC {} cannot generate code for compute capability {}.{}", version(), arch / 10, arch % 10));
  }
  out.cubin = known && !ptx;
  out.target = fmt::format("{}_{}", out.cubin ? "sm" : "compute", target);
  std::string arch_flag = "--gpu-architecture=" + out.target;
  // Line info: Nsight Compute can then show the generated source.
  const char* options[] = {arch_flag.c_str(), "--std=c++17", "-default-device", "-lineinfo"};
  int64_t t0 = prof::monotonic_ns();
  nvrtcProgram prog = nullptr;
  nvrtcResult r = a.create(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) throw RuntimeError(fmt::format("NVRTC could not take {}: {}", name, a.error_string(r)));
  r = a.compile(prog, int(std::size(options)), options);
  size_t log_size = 0;
  a.log_size(prog, &log_size);
  if (log_size > 1) {
    out.log.resize(log_size);
    a.log(prog, out.log.data());
    out.log.resize(log_size - 1);
  }
  if (r == NVRTC_SUCCESS) {
    size_t size = 0;
    if (out.cubin) {
      a.cubin_size(prog, &size);
      out.image.resize(size);
      a.cubin(prog, out.image.data());
    } else {
      a.ptx_size(prog, &size);  // includes the NUL
      out.image.resize(size);
      a.ptx(prog, out.image.data());
    }
  }
  a.destroy(&prog);
  out.compile_ns = prof::monotonic_ns() - t0;
  if (r != NVRTC_SUCCESS)
    throw RuntimeError(
        fmt::format("NVRTC failed to compile kernel {} for {}: {}\n{}", name, out.target, a.error_string(r), out.log));
  return out;
}

}  // namespace loupe::rt::backend::cuda
