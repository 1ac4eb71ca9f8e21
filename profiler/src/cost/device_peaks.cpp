// The table of device_peaks.h. Every figure is its maker's dense figure
// (datasheets give tensor-core rates "with sparsity", twice the dense
// rate, with an asterisk: those are halved here). T: 10^12 FLOP/s; G:
// 10^9 bytes/s.
#include "loupe/prof/device_peaks.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace loupe::prof {

namespace {

constexpr double T = 1e12, G = 1e9;

enum Row : uint8_t {
  v100_sxm2,
  v100_pcie,
  a100_40gb,
  a100_sxm_80gb,
  a100_pcie_80gb,
  h100_sxm,
  h100_pcie,
  h200,
  b200,
  l4,
  mi250x,
  mi250,
  mi300x,
  kRows
};

constexpr std::array<DevicePeaks, kRows> kPeaks = {{
    // NVIDIA Tesla V100 datasheet (SXM2): FP32 15.7, tensor (FP16) 125; HBM2 900 GB/s.
    {"NVIDIA V100 SXM2", 15.7 * T, 0, 0, 125 * T, 0, 900 * G},
    // The same datasheet, PCIe: FP32 14, tensor 112; 900 GB/s.
    {"NVIDIA V100 PCIe", 14 * T, 0, 0, 112 * T, 0, 900 * G},
    // NVIDIA A100 datasheet: FP32 19.5, TF32 156, BF16/FP16 312 (dense);
    // 40GB: 1,555 GB/s on SXM4 and PCIe.
    {"NVIDIA A100 40GB", 19.5 * T, 156 * T, 312 * T, 312 * T, 0, 1555 * G},
    // The same, 80GB SXM4: 2,039 GB/s.
    {"NVIDIA A100 SXM4 80GB", 19.5 * T, 156 * T, 312 * T, 312 * T, 0, 2039 * G},
    // The same, 80GB PCIe: 1,935 GB/s.
    {"NVIDIA A100 PCIe 80GB", 19.5 * T, 156 * T, 312 * T, 312 * T, 0, 1935 * G},
    // NVIDIA H100 datasheet, SXM: FP32 67, TF32 989, BF16/FP16 1,979, FP8
    // 3,958 with sparsity (halved); HBM3 3.35 TB/s.
    {"NVIDIA H100 SXM", 67 * T, 494.5 * T, 989.5 * T, 989.5 * T, 1979 * T, 3350 * G},
    // The same, PCIe: FP32 51, TF32 756, BF16/FP16 1,513, FP8 3,026 with
    // sparsity (halved); 2 TB/s.
    {"NVIDIA H100 PCIe", 51 * T, 378 * T, 756.5 * T, 756.5 * T, 1513 * T, 2000 * G},
    // NVIDIA H200 datasheet, SXM: the H100 SXM's rates; HBM3e 4.8 TB/s.
    {"NVIDIA H200 SXM", 67 * T, 494.5 * T, 989.5 * T, 989.5 * T, 1979 * T, 4800 * G},
    // NVIDIA HGX B200 datasheet, 8 GPUs: FP32 600 T, TF32 18 P, FP16/BF16
    // 36 P, FP8 72 P with sparsity (halved), 64 TB/s: per GPU.
    {"NVIDIA B200", 75 * T, 1125 * T, 2250 * T, 2250 * T, 4500 * T, 8000 * G},
    // NVIDIA L4 datasheet: FP32 30.3, TF32 120, BF16/FP16 242, FP8 485 with
    // sparsity (halved); 300 GB/s.
    {"NVIDIA L4", 30.3 * T, 60 * T, 121 * T, 121 * T, 242.5 * T, 300 * G},
    // AMD Instinct MI250X datasheet: FP32 matrix 95.7, FP16/BF16 383,
    // 3.2768 TB/s per package of two dies: per die.
    {"AMD Instinct MI250X (one die)", 47.85 * T, 0, 191.5 * T, 191.5 * T, 0, 1638.4 * G, true},
    // AMD Instinct MI250 datasheet: FP32 matrix 90.5, FP16/BF16 362.1,
    // 3.2768 TB/s per package: per die.
    {"AMD Instinct MI250 (one die)", 45.25 * T, 0, 181.05 * T, 181.05 * T, 0, 1638.4 * G, true},
    // AMD Instinct MI300X datasheet: FP32 matrix 163.4, TF32 653.7,
    // FP16/BF16 1,307.4, FP8 2,614.9 (dense); 5.3 TB/s.
    {"AMD Instinct MI300X", 163.4 * T, 653.7 * T, 1307.4 * T, 1307.4 * T, 2614.9 * T, 5300 * G},
}};

bool has(const std::string& upper, std::string_view part) { return upper.find(part) != std::string::npos; }

std::optional<Row> by_name(const DeviceIdentity& d) {
  std::string n = d.name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  bool pcie = has(n, "PCIE"), large = d.memory_bytes > (int64_t(48) << 30) || has(n, "80GB");
  if (has(n, "V100")) return pcie ? v100_pcie : v100_sxm2;
  if (has(n, "A100")) return !large ? a100_40gb : pcie ? a100_pcie_80gb : a100_sxm_80gb;
  if (has(n, "H100") && !has(n, "NVL")) return pcie ? h100_pcie : h100_sxm;
  if (has(n, "H200") && !has(n, "NVL")) return h200;
  if (has(n, "B200")) return b200;
  if (n == "NVIDIA L4") return l4;
  if (has(n, "MI250X")) return mi250x;
  if (has(n, "MI250")) return mi250;
  if (has(n, "MI300X")) return mi300x;
  return std::nullopt;
}

// ROCm often names its devices vaguely ("AMD Radeon Graphics", ""): its
// gfx version (9.0.a for MI200, 9.4.2 for MI300), 64-wide wavefronts and
// compute units per die tell the Instinct parts apart.
std::optional<Row> by_properties(const DeviceIdentity& d) {
  if (d.warp_size != 64) return std::nullopt;
  if (d.compute_major == 9 && d.compute_minor == 0 && d.multiprocessors == 110) return mi250x;
  if (d.compute_major == 9 && d.compute_minor == 0 && d.multiprocessors == 104) return mi250;
  if (d.compute_major == 9 && d.compute_minor == 4 && d.multiprocessors == 304) return mi300x;
  return std::nullopt;
}

}  // namespace

double DevicePeaks::for_dtype(DType t, bool use_tf32) const {
  switch (t) {
    case DType::fp32: return use_tf32 ? tf32 : fp32;
    case DType::bf16: return bf16;
    case DType::fp16: return fp16;
    case DType::fp8: return fp8;
    case DType::unknown:
    case DType::fp64:
    case DType::int8:
    case DType::other: return 0;
  }
  return 0;
}

std::optional<DevicePeaks> device_peaks(const DeviceIdentity& device) {
  std::optional<Row> row = by_name(device);
  if (!row) row = by_properties(device);
  if (!row) return std::nullopt;
  return kPeaks[*row];
}

}  // namespace loupe::prof
