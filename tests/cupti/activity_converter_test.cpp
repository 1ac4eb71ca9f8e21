// CUPTI activity records, built by hand, through the converter and a real
// capture into a trace: kinds, names, correlation, clock, threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "cupti/activity_converter.h"
#include "loupe/prof/capture.h"
#include "loupe/prof/clock.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"

using namespace loupe::prof;
using cupti::ActivityConverter;
using cupti::kCuptiCorrelationTag;

namespace {

std::string names(bool driver, uint32_t cbid) {
  if (driver) return cbid == 1 ? "cuLaunchKernel" : "cuMemcpyDtoH_v2";
  switch (cbid) {
    case 10: return "cudaLaunchKernel";
    case 11: return "cudaMemcpy";
    case 12: return "cudaStreamSynchronize";
    default: return "cudaMalloc";
  }
}

template <typename T>
const CUpti_Activity* as_activity(const T& r) {
  return reinterpret_cast<const CUpti_Activity*>(&r);
}

CUpti_ActivityKernel10 kernel(uint32_t corr, uint64_t start, uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.streamId = 7;
  k.correlationId = corr;
  k.name = name;
  return k;
}

CUpti_ActivityAPI api(CUpti_ActivityKind kind, uint32_t cbid, uint32_t corr, uint64_t start, uint64_t end,
                      uint32_t tid) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = kind;
  a.cbid = cbid;
  a.correlationId = corr;
  a.start = start;
  a.end = end;
  a.threadId = tid;
  return a;
}

TEST(ActivityConverter, KernelsAndTheirLaunches) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto launch = api(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 5, 100, 110, 42);
  auto k = kernel(5, 200, 260, "_Z6squarePfi");
  c.convert(as_activity(launch), out);
  c.convert(as_activity(k), out);
  c.finish_buffer(out);
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].name, "cudaLaunchKernel");
  EXPECT_EQ(out.launches[0].os_tid, 42);
  EXPECT_EQ(out.launches[0].correlation, kCuptiCorrelationTag | 5);
  ASSERT_EQ(out.ops.size(), 1u);
  EXPECT_EQ(out.ops[0].name, "square(float*, int)");  // demangled
  EXPECT_EQ(out.ops[0].start, 200);
  EXPECT_EQ(out.ops[0].end, 260);
  EXPECT_EQ(out.ops[0].stream, 7u);
  EXPECT_EQ(out.ops[0].correlation, kCuptiCorrelationTag | 5);
}

TEST(ActivityConverter, DriverCallUnderARuntimeCallIsNotASecondLaunch) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  // The driver call ends first, so its record comes first.
  auto inner = api(CUPTI_ACTIVITY_KIND_DRIVER, 1, 9, 105, 108, 42);
  auto outer = api(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 9, 100, 110, 42);
  c.convert(as_activity(inner), out);
  c.convert(as_activity(outer), out);
  c.finish_buffer(out, true);
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].name, "cudaLaunchKernel");
  ASSERT_EQ(out.spans.size(), 1u);
  EXPECT_EQ(out.spans[0].name, "cuLaunchKernel");
}

TEST(ActivityConverter, DriverOnlyProgramsGetTheirLaunches) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto call = api(CUPTI_ACTIVITY_KIND_DRIVER, 1, 3, 100, 108, 42);
  c.convert(as_activity(call), out);
  c.finish_buffer(out);  // its runtime call may still come in the next buffer
  EXPECT_TRUE(out.launches.empty());
  c.finish_buffer(out);  // it did not: the driver call is the launch
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].name, "cuLaunchKernel");
}

TEST(ActivityConverter, ExternalCorrelationLinksToTheRuntimesLaunch) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  CUpti_ActivityExternalCorrelation e;
  std::memset(&e, 0, sizeof e);
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = 777;
  e.correlationId = 12;
  auto launch = api(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 12, 100, 110, 42);
  auto k = kernel(12, 200, 300, "k");
  c.convert(as_activity(e), out);
  c.convert(as_activity(launch), out);
  c.convert(as_activity(k), out);
  c.finish_buffer(out, true);
  ASSERT_EQ(out.ops.size(), 1u);
  EXPECT_EQ(out.ops[0].correlation, 777u);  // the loupe runtime's id
  EXPECT_TRUE(out.launches.empty()) << "the runtime recorded the launch itself";
  ASSERT_EQ(out.spans.size(), 1u);
  EXPECT_EQ(out.spans[0].kind, SpanKind::runtime);
}

TEST(ActivityConverter, CopiesBecomeTransfersOfTheCallingThread) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.bytes = 4096;
  m.start = 500;
  m.end = 520;
  m.streamId = 7;
  m.correlationId = 20;
  auto call = api(CUPTI_ACTIVITY_KIND_RUNTIME, 11, 20, 400, 530, 42);  // cudaMemcpy
  c.convert(as_activity(m), out);                                      // the device record first, this time
  c.convert(as_activity(call), out);
  c.finish_buffer(out, true);
  ASSERT_EQ(out.ops.size(), 1u);
  EXPECT_EQ(out.ops[0].kind, DeviceOpKind::memcpy);
  EXPECT_EQ(out.ops[0].copy, CopyKind::device_to_host);
  EXPECT_EQ(out.ops[0].bytes, 4096);
  ASSERT_EQ(out.copies.size(), 1u);
  EXPECT_EQ(out.copies[0].os_tid, 42);
  EXPECT_EQ(out.copies[0].start, 400);
  EXPECT_EQ(out.copies[0].end, 530);
  EXPECT_TRUE(out.copies[0].synchronous);
  EXPECT_EQ(out.copies[0].host_memory, HostMemory::pageable);
  ASSERT_EQ(out.launches.size(), 1u);  // cudaMemcpy queued the copy
}

TEST(ActivityConverter, SynchronizeIsAWait) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto call = api(CUPTI_ACTIVITY_KIND_RUNTIME, 12, 30, 100, 900, 42);
  c.convert(as_activity(call), out);
  ASSERT_EQ(out.spans.size(), 1u);
  EXPECT_EQ(out.spans[0].kind, SpanKind::wait);
}

TEST(ActivityConverter, NvtxRangesNestAndMemoryKeepsTotals) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto marker = [](uint32_t id, CUpti_ActivityFlag flag, uint64_t t, const char* name) {
    CUpti_ActivityMarker2 m;
    std::memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = flag;
    m.timestamp = t;
    m.id = id;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.threadId = 42;
    m.name = name;
    return m;
  };
  auto a = marker(1, CUPTI_ACTIVITY_FLAG_MARKER_START, 100, "step");
  auto b = marker(2, CUPTI_ACTIVITY_FLAG_MARKER_START, 110, "forward");
  auto b_end = marker(2, CUPTI_ACTIVITY_FLAG_MARKER_END, 150, nullptr);
  auto a_end = marker(1, CUPTI_ACTIVITY_FLAG_MARKER_END, 200, nullptr);
  for (auto* m : {&a, &b, &b_end, &a_end}) c.convert(as_activity(*m), out);
  ASSERT_EQ(out.spans.size(), 2u);
  EXPECT_EQ(out.spans[0].name, "forward");
  EXPECT_EQ(out.spans[0].depth, 1u);
  EXPECT_EQ(out.spans[1].name, "step");
  EXPECT_EQ(out.spans[1].depth, 0u);
  EXPECT_EQ(out.spans[1].start, 100);
  EXPECT_EQ(out.spans[1].end, 200);

  auto mem = [](CUpti_ActivityMemoryOperationType op, uint64_t bytes, uint64_t t) {
    CUpti_ActivityMemory4 m;
    std::memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = op;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = bytes;
    m.timestamp = t;
    return m;
  };
  auto m1 = mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 1000, 10);
  auto m2 = mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 500, 20);
  auto m3 = mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 1000, 30);
  for (auto* m : {&m1, &m2, &m3}) c.convert(as_activity(*m), out);
  ASSERT_EQ(out.memory.size(), 3u);
  EXPECT_EQ(out.memory[1].allocated, 1500);
  EXPECT_EQ(out.memory[2].allocated, 500);
  EXPECT_EQ(out.memory[2].kind, MemoryEventKind::free);
}

TEST(ActivityConverter, UnknownKindsAreCountedAsSkipped) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  CUpti_Activity other;
  other.kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING;
  c.convert(&other, out);
  EXPECT_EQ(c.skipped(), 1u);
  EXPECT_EQ(out.skipped, 1u);
}

// Converted events reach the trace on its clock and on the right threads.
TEST(ActivityConverter, ThroughACaptureIntoTheTrace) {
  loupe::test::TempDir dir;
  int64_t t0;
  {
    Capture capture({.path = dir.file("t.db")});
    ActivityConverter c(names);
    detail::ExternalEvents out;
    t0 = monotonic_ns();
    auto launch = api(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 5, uint64_t(t0), uint64_t(t0 + 1000), uint32_t(::gettid()));
    auto k = kernel(5, uint64_t(t0 + 5000), uint64_t(t0 + 9000), "gemm");
    c.convert(as_activity(launch), out);
    c.convert(as_activity(k), out);
    c.finish_buffer(out, true);
    out.devices.push_back({.id = 0,
                           .name = "NVIDIA H200",
                           .kind = DeviceKind::cuda,
                           .memory_capacity = int64_t(141) << 30,
                           .copy_bandwidth = 0});
    ASSERT_TRUE(detail::submit_external(std::move(out)));
  }
  TraceModel m = load_trace(dir.file("t.db"));
  int64_t origin = std::stoll(m.info.meta.at("origin_monotonic_ns"));
  ASSERT_EQ(m.device_ops.size(), 1u);
  EXPECT_EQ(m.device_ops[0].start[0] + origin, t0 + 5000);
  EXPECT_EQ(m.device_ops[0].dur[0], 4000);
  ASSERT_EQ(m.launches.size(), 1u);
  const Thread* t = m.thread(m.launches[0].thread);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->os_tid, ::gettid());
  EXPECT_EQ(m.launches[0].correlation[0], m.device_ops[0].correlation[0]);
  ASSERT_NE(m.device(0), nullptr);
  EXPECT_EQ(m.device(0)->name, "NVIDIA H200");
}

}  // namespace
