// The CUDA and HIP runtime and driver calls a host thread made while a
// device sat idle, by what they do (from their names), summed by name, and
// how much of their time only a program's start-up spends: a kernel's
// first launch loading its module, a context or a library being set up.
// Such time belongs to no step, and a profile taken after warm-up steps
// does not hold it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/context.h"

namespace loupe::prof::analysis {

// A launch call that takes this long is loading its kernel's module (CUDA
// and HIP load modules lazily, at a kernel's first launch on a device); a
// launch otherwise returns in microseconds.
constexpr int64_t kModuleLoadNs = 1'000'000;
// No allocation, release, query or creation takes this long in a steady
// loop while the device is idle (a cudaFree waits for nothing then): a call
// this long is the driver or a library setting up (context creation,
// cuDNN's or cuBLAS's handle loading its kernels, first reservations).
constexpr int64_t kSetUpCallNs = 100'000'000;

// What a CUDA or HIP runtime or driver call does, from its name
// (cudaLaunchKernel, hipLaunchKernel, cuLaunchKernel; cudaMalloc, cudaFree,
// cuMemAlloc_v2, hipHostMalloc; cudaStreamCreate...); `code` for any other
// name. Copies and waits are code here: a gap behind them is a sync, or the
// copy is the work.
bool is_runtime_call(std::string_view name);
HostWork runtime_call_kind(std::string_view name);

// Whether a device op is its kernel's first run on its device, from an
// index of each kernel name's first run built when first asked.
class FirstRuns {
 public:
  explicit FirstRuns(const Context& ctx) : ctx_(ctx) {}
  bool first_run(uint64_t correlation);

 private:
  const Context& ctx_;
  std::vector<std::vector<int64_t>> earliest_;  // [device][kernel name]: its first start
};

// The runtime calls of one name in a window, and the start-up among them.
struct CallsOfName {
  std::string_view name;
  int64_t ns = 0;  // inside the window
  size_t calls = 0;
  int64_t start_up_ns = 0;  // of first launches and set-up calls (kModuleLoadNs, kSetUpCallNs)
  // The longest of those calls: its time in the window, when it began, and
  // its kernel if it was a first launch.
  int64_t longest_start_up_ns = 0;
  int64_t first_call_at = 0;
  std::string_view first_kernel;
};
struct RuntimeCalls {
  std::vector<CallsOfName> by_name;  // most time first
  int64_t start_up_ns = 0;
};
// The runtime calls thread `t` made in [a, b), launch calls included.
RuntimeCalls runtime_calls_in(const Context& ctx, const ThreadActivity& t, FirstRuns& first, int64_t a, int64_t b);

// "cudaFree 6.534 s (2 calls), cudaLaunchKernel 3.056 s (the first launch
// of `k`)": the largest `most` names.
std::string runtime_calls_text(const RuntimeCalls& calls, size_t most);

}  // namespace loupe::prof::analysis
