// The peak throughput of the GPUs users train on: dense (no structured
// sparsity) tensor-core FLOP/s by element type, the non-tensor FP32 rate,
// and memory bandwidth, each from its maker's datasheet
// (profiler/src/cost/device_peaks.cpp names the source of every row;
// docs/analyses.md lists them). A trace names its device, and sometimes
// not well ("AMD Radeon Graphics" for an MI250's die, "" for an MI300X):
// the match reads the name first, then the properties the trace gives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "loupe/prof/op_cost.h"

namespace loupe::prof {

struct DevicePeaks {
  std::string_view model;  // "NVIDIA A100 SXM4 80GB"
  // FLOP/s; 0 where the device has no such unit (a V100 has no BF16).
  double fp32 = 0;  // without tensor cores (AMD: its FP32 matrix rate)
  double tf32 = 0, bf16 = 0, fp16 = 0, fp8 = 0;
  double memory_bandwidth = 0;  // bytes/s
  // An AMD MI200's package holds two dies, each its own device in a trace:
  // these rows are per die.
  bool per_die = false;

  // The peak for work in `t` on tensor cores (fp32: TF32 when `tf32`);
  // 0 when the device has none.
  double for_dtype(DType t, bool tf32 = false) const;
};

// What a trace tells of its device (Kineto's `deviceProperties`).
struct DeviceIdentity {
  std::string name;
  int compute_major = 0, compute_minor = 0;  // CUDA compute capability; ROCm: the gfx version's digits
  int64_t multiprocessors = 0;               // SMs; ROCm: compute units
  int64_t memory_bytes = 0;
  int warp_size = 0;  // 64 on AMD GPUs
};

// The device's row, or nullopt: not in the table, so its peaks cannot be
// told from the trace.
std::optional<DevicePeaks> device_peaks(const DeviceIdentity& device);

}  // namespace loupe::prof
