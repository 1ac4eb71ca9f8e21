// Device peaks (device_peaks.h), matched on what real traces say of their
// devices: every Kineto fixture's deviceProperties, read from the raw JSON.
#include <gtest/gtest.h>

#include <filesystem>

#include "cost/kineto_json.h"
#include "loupe/prof/device_peaks.h"

namespace {

using loupe::prof::device_peaks;
using loupe::prof::DeviceIdentity;
using loupe::prof::DevicePeaks;
using loupe::prof::DType;

DeviceIdentity first_device(const std::string& path) {
  nlohmann::json trace = loupe::test::read_gzipped_json(path);
  const nlohmann::json& p = trace.at("deviceProperties").at(0);
  return {.name = p.value("name", ""),
          .compute_major = p.value("computeMajor", 0),
          .compute_minor = p.value("computeMinor", 0),
          .multiprocessors = p.value("numSms", int64_t(0)),
          .memory_bytes = p.value("totalGlobalMem", int64_t(0)),
          .warp_size = p.value("warpSize", 0)};
}

struct Case {
  const char* dir;
  const char* file;
  const char* model;
};

TEST(DevicePeaks, EachFixturesDeviceIsMatchedFromWhatItsTraceSays) {
  const Case cases[] = {
      {LOUPE_FIXTURES_DIR, "v100_train_5steps.json.gz", "NVIDIA V100 SXM2"},  // "Tesla V100-SXM2-32GB"
      {LOUPE_FIXTURES_DIR, "a100_nccl.json.gz", "NVIDIA A100 40GB"},          // "NVIDIA A100-PG509-200", 39.4 GiB
      {LOUPE_REPO_FIXTURES_DIR, "a100_torchrec_cudagraph.json.gz", "NVIDIA A100 SXM4 80GB"},
      {LOUPE_REPO_FIXTURES_DIR, "h100_qwen_infer.json.gz", "NVIDIA H100 SXM"},  // "NVIDIA H100 80GB HBM3"
      {LOUPE_REPO_FIXTURES_DIR, "b200_vllm_tp8.json.gz", "NVIDIA B200"},
      {LOUPE_FIXTURES_DIR, "mi250_minitoy_train.json.gz", "AMD Instinct MI250 (one die)"},  // "AMD Radeon Graphics"
      {LOUPE_REPO_FIXTURES_DIR, "mi300x_vllm_decode_full_graph.json.gz", "AMD Instinct MI300X"},  // named ""
  };
  int checked = 0;
  for (const Case& c : cases) {
    std::string path = std::string(c.dir) + "/" + c.file;
    if (!std::filesystem::exists(path)) continue;  // the shared fixtures, beside the checkout, may be absent
    std::optional<DevicePeaks> p = device_peaks(first_device(path));
    ASSERT_TRUE(p) << c.file;
    EXPECT_EQ(p->model, c.model) << c.file;
    ++checked;
  }
  EXPECT_GE(checked, 4);  // the repository's own fixtures at least
}

TEST(DevicePeaks, ThePeakFollowsTheTypeTheWorkRanIn) {
  std::optional<DevicePeaks> a100 = device_peaks({.name = "NVIDIA A100-SXM4-80GB", .memory_bytes = int64_t(80) << 30});
  ASSERT_TRUE(a100);
  EXPECT_EQ(a100->for_dtype(DType::fp32), 19.5e12);
  EXPECT_EQ(a100->for_dtype(DType::fp32, true), 156e12);  // TF32
  EXPECT_EQ(a100->for_dtype(DType::bf16), 312e12);
  EXPECT_EQ(a100->for_dtype(DType::fp8), 0);  // no FP8 units before Hopper
  EXPECT_EQ(a100->memory_bandwidth, 2039e9);
  std::optional<DevicePeaks> v100 = device_peaks({.name = "Tesla V100-PCIE-16GB"});
  ASSERT_TRUE(v100);
  EXPECT_EQ(v100->model, "NVIDIA V100 PCIe");
  EXPECT_EQ(v100->for_dtype(DType::bf16), 0);
  EXPECT_EQ(v100->for_dtype(DType::fp16), 112e12);
  std::optional<DevicePeaks> h100 = device_peaks({.name = "NVIDIA H100 PCIe"});
  ASSERT_TRUE(h100);
  EXPECT_EQ(h100->for_dtype(DType::fp8), 1513e12);
}

TEST(DevicePeaks, AnUnknownDeviceIsNotGuessed) {
  EXPECT_FALSE(device_peaks({.name = "NVIDIA GeForce RTX 4090"}));
  EXPECT_FALSE(device_peaks({.name = "NVIDIA H100 NVL"}));  // other clocks and memory than either H100 row
  EXPECT_FALSE(
      device_peaks({.name = "", .compute_major = 9, .compute_minor = 0, .multiprocessors = 64, .warp_size = 64}));
  EXPECT_FALSE(device_peaks({}));
}

}  // namespace
