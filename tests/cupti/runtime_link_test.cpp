// How CUPTI's records meet the loupe runtime's own, from hand-built
// records: copies the runtime made are its transfers (with call sites),
// not CUPTI's; its NVTX phases (domain `loupe`) are its host spans already;
// and its GPUs' records get its device and stream ids.
#include <gtest/gtest.h>

#include <cstring>

#include "cupti/activity_converter.h"
#include "cupti/adoption.h"

using namespace loupe::prof;
using cupti::ActivityConverter;

namespace {

std::string names(bool, uint32_t cbid) { return cbid == 41 ? "cudaMemcpyAsync" : "cudaLaunchKernel"; }

template <typename T>
const CUpti_Activity* as_activity(const T& r) {
  return reinterpret_cast<const CUpti_Activity*>(&r);
}

CUpti_ActivityExternalCorrelation external(uint32_t corr, uint64_t id) {
  CUpti_ActivityExternalCorrelation e;
  std::memset(&e, 0, sizeof e);
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = id;
  e.correlationId = corr;
  return e;
}

CUpti_ActivityAPI copy_call(uint32_t corr) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = 41;
  a.correlationId = corr;
  a.start = 100;
  a.end = 110;
  a.threadId = 42;
  return a;
}

CUpti_ActivityMemcpy6 copy(uint32_t corr) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.bytes = 4096;
  m.start = 200;
  m.end = 300;
  m.correlationId = corr;
  m.streamId = 13;
  return m;
}

TEST(CuptiRuntimeLink, CopiesTheRuntimeMadeAreItsTransfers) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto e = external(7, 900);
  auto call = copy_call(7);
  auto m = copy(7);
  c.convert(as_activity(e), out);
  c.convert(as_activity(call), out);
  c.convert(as_activity(m), out);
  c.finish_buffer(out, true);
  ASSERT_EQ(out.ops.size(), 1u);
  EXPECT_EQ(out.ops[0].correlation, 900u) << "the device copy links to the runtime's copy";
  EXPECT_TRUE(out.copies.empty()) << "the runtime records the transfer itself, with its call site";
  EXPECT_TRUE(out.launches.empty());

  // The same copy from an unmodified program is a transfer.
  detail::ExternalEvents plain;
  auto call2 = copy_call(8);
  auto m2 = copy(8);
  c.convert(as_activity(call2), plain);
  c.convert(as_activity(m2), plain);
  c.finish_buffer(plain, true);
  EXPECT_EQ(plain.copies.size(), 1u);
}

TEST(CuptiRuntimeLink, TheRuntimesNvtxPhasesAreLeftToIt) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto marker = [](uint32_t id, uint32_t flags, uint64_t t, const char* name, const char* domain) {
    CUpti_ActivityMarker2 m;
    std::memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = CUpti_ActivityFlag(flags);
    m.timestamp = t;
    m.id = id;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.threadId = 42;
    m.name = name;
    m.domain = domain;
    return m;
  };
  auto a = marker(1, CUPTI_ACTIVITY_FLAG_MARKER_START, 10, "jit step", "loupe");
  auto b = marker(1, CUPTI_ACTIVITY_FLAG_MARKER_END, 20, nullptr, "loupe");
  auto x = marker(2, CUPTI_ACTIVITY_FLAG_MARKER_START, 30, "forward", nullptr);
  auto y = marker(2, CUPTI_ACTIVITY_FLAG_MARKER_END, 40, nullptr, nullptr);
  for (auto* m : {&a, &b, &x, &y}) c.convert(as_activity(*m), out);
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

}  // namespace
