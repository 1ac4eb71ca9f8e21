// How CUPTI's records meet the loupe runtime's own, from hand-built
// records: copies the runtime made are its transfers (with call sites),
// not CUPTI's; its NVTX phases (domain `loupe`) are its host spans already;
// and its GPUs' records get its device and stream ids.
#include <gtest/gtest.h>

#include "cupti/activity_converter.h"
#include "cupti/activity_records.h"
#include "cupti/adoption.h"

using namespace loupe::prof;
using cupti::ActivityConverter;
using loupe::test::api_call_record;
using loupe::test::convert;
using loupe::test::external_correlation_record;
using loupe::test::marker_record;

namespace {

std::string names(bool, uint32_t cbid) { return cbid == 41 ? "cudaMemcpyAsync" : "cudaLaunchKernel"; }

// A cudaMemcpyAsync of 4096 bytes to the device, its call and its copy.
CUpti_ActivityAPI copy_call(uint32_t corr) {
  return api_call_record(CUPTI_ACTIVITY_KIND_RUNTIME, 41, corr, 100, 110, 42);
}

CUpti_ActivityMemcpy6 copy(uint32_t corr) {
  return {.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
          .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
          .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
          .bytes = 4096,
          .start = 200,
          .end = 300,
          .streamId = 13,
          .correlationId = corr};
}

TEST(CuptiRuntimeLink, CopiesTheRuntimeMadeAreItsTransfers) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  convert(c, out, external_correlation_record(7, 900), copy_call(7), copy(7));
  c.finish_buffer(out, true);
  ASSERT_EQ(out.ops.size(), 1u);
  EXPECT_EQ(out.ops[0].correlation, 900u) << "the device copy links to the runtime's copy";
  EXPECT_TRUE(out.copies.empty()) << "the runtime records the transfer itself, with its call site";
  EXPECT_TRUE(out.launches.empty());

  // The same copy from an unmodified program is a transfer.
  detail::ExternalEvents plain;
  convert(c, plain, copy_call(8), copy(8));
  c.finish_buffer(plain, true);
  EXPECT_EQ(plain.copies.size(), 1u);
}

TEST(CuptiRuntimeLink, TheRuntimesNvtxPhasesAreLeftToIt) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto marker = [](uint32_t id, CUpti_ActivityFlag flag, uint64_t t, const char* name, const char* domain) {
    return marker_record(id, flag, t, 42, name, domain);
  };
  convert(c, out, marker(1, CUPTI_ACTIVITY_FLAG_MARKER_START, 10, "jit step", "loupe"),
          marker(1, CUPTI_ACTIVITY_FLAG_MARKER_END, 20, nullptr, "loupe"),
          marker(2, CUPTI_ACTIVITY_FLAG_MARKER_START, 30, "forward", nullptr),
          marker(2, CUPTI_ACTIVITY_FLAG_MARKER_END, 40, nullptr, nullptr));
  ASSERT_EQ(out.spans.size(), 1u);
  EXPECT_EQ(out.spans[0].name, "forward");
}

TEST(CuptiRuntimeLink, AdoptedGpusGetTheRuntimesIds) {
  cupti::Adoption a;
  detail::ExternalEvents batch;
  batch.ops.push_back({0, 13, 1, 2, DeviceOpKind::kernel, "k", 0, CopyKind::none, 5});
  batch.ops.push_back({0, 14, 1, 2, DeviceOpKind::memcpy, "Memcpy HtoD", 64, CopyKind::host_to_device, 6});
  batch.ops.push_back({0, 99, 1, 2, DeviceOpKind::kernel, "other stream", 0, CopyKind::none, 7});
  batch.ops.push_back({1, 13, 1, 2, DeviceOpKind::kernel, "other GPU", 0, CopyKind::none, 8});
  batch.memory.push_back({0, 5, MemoryEventKind::alloc, 1024, 0x10, 1024, 1024});
  batch.memory.push_back({1, 5, MemoryEventKind::alloc, 1024, 0x10, 1024, 1024});
  batch.devices.push_back(
      {.id = 0, .name = "NVIDIA H200", .kind = DeviceKind::cuda, .memory_capacity = 1, .copy_bandwidth = 0});
  batch.devices.push_back(
      {.id = 1, .name = "NVIDIA H200", .kind = DeviceKind::cuda, .memory_capacity = 1, .copy_bandwidth = 0});
  batch.copies.push_back({42, 1, 2, 0, CopyKind::host_to_device, 64, true, HostMemory::pageable, 9});

  detail::ExternalEvents untouched = batch;
  a.apply(untouched);  // nothing adopted: nothing changes
  EXPECT_EQ(untouched.ops[0].device, 0u);
  EXPECT_EQ(untouched.memory.size(), 2u);

  a.adopt_device(0, 16);
  a.adopt_stream(0, 13, 0);
  a.adopt_stream(0, 14, 1);
  a.apply(batch);
  EXPECT_EQ(batch.ops[0].device, 16u);
  EXPECT_EQ(batch.ops[0].stream, 0u);
  EXPECT_EQ(batch.ops[1].stream, 1u);
  EXPECT_EQ(batch.ops[2].device, 16u);
  EXPECT_EQ(batch.ops[2].stream, 99u) << "a stream the runtime did not make keeps CUPTI's id";
  EXPECT_EQ(batch.ops[3].device, 1u) << "another GPU is not the runtime's";
  ASSERT_EQ(batch.memory.size(), 1u) << "the runtime's allocator records its own GPU's memory";
  EXPECT_EQ(batch.memory[0].device, 1u);
  ASSERT_EQ(batch.devices.size(), 1u) << "the runtime registers its own GPU";
  EXPECT_EQ(batch.devices[0].id, 1u);
  EXPECT_EQ(batch.copies[0].device, 16u);
}

// PyTorch's allocator history records GPU 1's memory during a capture:
// CUPTI's cudaMalloc records of GPU 1 are left out then, its kernels kept;
// GPU 0's records stay. Once the capture is over, GPU 1's come back.
TEST(CuptiRuntimeLink, MemoryLeftToAFrameworkIsNotCountedTwice) {
  cupti::Adoption a;
  auto batch = [] {
    detail::ExternalEvents b;
    b.ops.push_back({1, 13, 1, 2, DeviceOpKind::kernel, "k", 0, CopyKind::none, 5});
    b.memory.push_back({0, 5, MemoryEventKind::alloc, 1024, 0x10, 1024, 1024});
    b.memory.push_back({1, 5, MemoryEventKind::alloc, 2048, 0x20, 2048, 2048});
    return b;
  };
  a.leave_memory(1, true);
  detail::ExternalEvents during = batch();
  a.apply(during);
  ASSERT_EQ(during.memory.size(), 1u);
  EXPECT_EQ(during.memory[0].device, 0u);
  EXPECT_EQ(during.ops.size(), 1u);
  a.leave_memory(1, false);
  detail::ExternalEvents after = batch();
  a.apply(after);
  EXPECT_EQ(after.memory.size(), 2u);
}

}  // namespace
