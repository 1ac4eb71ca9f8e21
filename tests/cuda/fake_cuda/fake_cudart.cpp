// A CUDA runtime that runs on the CPU, for testing loupe's CUDA device end
// to end on machines without a GPU: built as libcudart.so.13 and put first
// on LD_LIBRARY_PATH, it stands in for the real one. One device; its memory
// is host memory; work runs at once, when it is queued, so every event is
// complete as soon as it is recorded; kernels are the sources NVRTC was
// given (fake_nvrtc.cpp passes them through), compiled by the host compiler
// and run by the emulator (../emulator.h). Only what loupe's CUDA device
// calls is here.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <regex>
#include <string>

#include "emulator.h"

namespace {

namespace emu = loupe::test::emu;

constexpr size_t kMemory = size_t(8) << 30;

std::mutex g_mu;  // launches and the kernel cache: one at a time
size_t g_allocated = 0;
std::map<void*, size_t> g_sizes;

struct FakeEvent {
  int64_t ns = 0;
};

struct Kernel {
  emu::Module* module;
  void* fn;
  size_t params;
};

struct Library {
  std::unique_ptr<emu::Module> module;
  std::map<std::string, Kernel> kernels;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string cache_dir() {
  const char* d = std::getenv("LOUPE_FAKE_CUDA_CACHE");
  std::string dir = d && *d ? d : "/tmp/loupe-fake-cuda";
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}

const char* cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorFake"; }
const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "an error of the fake CUDA runtime";
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  std::memset(prop, 0, sizeof *prop);
  std::strcpy(prop->name, "loupe emulated GPU (host CPU)");
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 2;
  prop->totalGlobalMem = kMemory;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  std::lock_guard lock(g_mu);
  *total = kMemory;
  *free = kMemory - g_allocated;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  std::lock_guard lock(g_mu);
  if (g_allocated + bytes > kMemory) return cudaErrorMemoryAllocation;
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (*p == nullptr) return cudaErrorMemoryAllocation;
  g_allocated += bytes;
  g_sizes[*p] = bytes;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  std::lock_guard lock(g_mu);
  g_allocated -= g_sizes[p];
  g_sizes.erase(p);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  *p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFreeHost(void* p) {
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  *s = reinterpret_cast<cudaStream_t>(new int(0));
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete reinterpret_cast<int*>(s);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  *e = reinterpret_cast<cudaEvent_t>(new FakeEvent);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<FakeEvent*>(e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  reinterpret_cast<FakeEvent*>(e)->ns = now_ns();
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = float(double(reinterpret_cast<FakeEvent*>(b)->ns - reinterpret_cast<FakeEvent*>(a)->ns) / 1e6);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind, cudaStream_t) {
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

// The "image" is the kernel source: the fake NVRTC passes it through.
cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code, enum cudaJitOption*, void**, unsigned int,
                                enum cudaLibraryOption*, void**, unsigned int) {
  std::string source(static_cast<const char*>(code));
  // Each __global__ function and its parameter count.
  static const std::regex entry_re(R"(__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(([^)]*)\))");
  std::vector<std::string> names;
  std::vector<size_t> params;
  for (std::sregex_iterator it(source.begin(), source.end(), entry_re), end; it != end; ++it) {
    names.push_back((*it)[1]);
    std::string list = (*it)[2];
    params.push_back(
        list.find_first_not_of(" \n") == std::string::npos ? 0 : size_t(std::count(list.begin(), list.end(), ',')) + 1);
  }
  try {
    std::lock_guard lock(g_mu);
    auto* lib = new Library;
    lib->module = std::make_unique<emu::Module>(std::vector<std::string>{source},
                                                std::vector<std::vector<std::string>>{names}, cache_dir(), true);
    for (size_t i = 0; i < names.size(); ++i)
      lib->kernels[names[i]] = {lib->module.get(), lib->module->entry(0, names[i]), params[i]};
    *library = reinterpret_cast<cudaLibrary_t>(lib);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake CUDA runtime: %s\n", e.what());
    return cudaErrorInvalidSource;
  }
  return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) {
  auto* lib = reinterpret_cast<Library*>(library);
  auto it = lib->kernels.find(name);
  if (it == lib->kernels.end()) return cudaErrorSymbolNotFound;
  *kernel = reinterpret_cast<cudaKernel_t>(&it->second);
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t, cudaStream_t) {
  const auto* k = static_cast<const Kernel*>(func);
  emu::Launch l{&k->module->context(), k->fn, {}};
  for (size_t i = 0; i < k->params; ++i) l.args.push_back(*static_cast<void**>(args[i]));
  std::lock_guard lock(g_mu);
  emu::launch(l, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z});
  return cudaSuccess;
}

}  // extern "C"
