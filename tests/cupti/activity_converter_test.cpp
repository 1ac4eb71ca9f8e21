// CUPTI activity records, built by hand, through the converter and a real
// capture into a trace: kinds, names, correlation, clock, threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include "cupti/activity_converter.h"
#include "cupti/activity_records.h"
#include "loupe/prof/capture.h"
#include "loupe/prof/clock.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"

using namespace loupe::prof;
using cupti::ActivityConverter;
using cupti::kCuptiCorrelationTag;
using loupe::test::api_call_record;
using loupe::test::convert;
using loupe::test::external_correlation_record;
using loupe::test::kernel_record;
using loupe::test::marker_record;

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

TEST(ActivityConverter, KernelsAndTheirLaunches) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto launch = api_call_record(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 5, 100, 110, 42);
  auto k = kernel_record(5, 200, 260, 7, "_Z6squarePfi");
  convert(c, out, launch, k);
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
  auto inner = api_call_record(CUPTI_ACTIVITY_KIND_DRIVER, 1, 9, 105, 108, 42);
  auto outer = api_call_record(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 9, 100, 110, 42);
  convert(c, out, inner, outer);
  c.finish_buffer(out, true);
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].name, "cudaLaunchKernel");
  ASSERT_EQ(out.spans.size(), 1u);
  EXPECT_EQ(out.spans[0].name, "cuLaunchKernel");
}

TEST(ActivityConverter, DriverOnlyProgramsGetTheirLaunches) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto call = api_call_record(CUPTI_ACTIVITY_KIND_DRIVER, 1, 3, 100, 108, 42);
  convert(c, out, call);
  c.finish_buffer(out);  // its runtime call may still come in the next buffer
  EXPECT_TRUE(out.launches.empty());
  c.finish_buffer(out);  // it did not: the driver call is the launch
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].name, "cuLaunchKernel");
}

TEST(ActivityConverter, ExternalCorrelationLinksToTheRuntimesLaunch) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto e = external_correlation_record(12, 777);
  auto launch = api_call_record(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 12, 100, 110, 42);
  auto k = kernel_record(12, 200, 300, 7, "k");
  convert(c, out, e, launch, k);
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
  CUpti_ActivityMemcpy6 m{.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
                          .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
                          .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                          .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                          .bytes = 4096,
                          .start = 500,
                          .end = 520,
                          .streamId = 7,
                          .correlationId = 20};
  auto call = api_call_record(CUPTI_ACTIVITY_KIND_RUNTIME, 11, 20, 400, 530, 42);  // cudaMemcpy
  // The device record first, this time.
  convert(c, out, m, call);
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
  auto call = api_call_record(CUPTI_ACTIVITY_KIND_RUNTIME, 12, 30, 100, 900, 42);
  convert(c, out, call);
  ASSERT_EQ(out.spans.size(), 1u);
  EXPECT_EQ(out.spans[0].kind, SpanKind::wait);
}

TEST(ActivityConverter, NvtxRangesNestAndMemoryKeepsTotals) {
  ActivityConverter c(names);
  detail::ExternalEvents out;
  auto marker = [](uint32_t id, CUpti_ActivityFlag flag, uint64_t t, const char* name) {
    return marker_record(id, flag, t, 42, name, nullptr);
  };
  convert(c, out, marker(1, CUPTI_ACTIVITY_FLAG_MARKER_START, 100, "step"),
          marker(2, CUPTI_ACTIVITY_FLAG_MARKER_START, 110, "forward"),
          marker(2, CUPTI_ACTIVITY_FLAG_MARKER_END, 150, nullptr),
          marker(1, CUPTI_ACTIVITY_FLAG_MARKER_END, 200, nullptr));
  ASSERT_EQ(out.spans.size(), 2u);
  EXPECT_EQ(out.spans[0].name, "forward");
  EXPECT_EQ(out.spans[0].depth, 1u);
  EXPECT_EQ(out.spans[1].name, "step");
  EXPECT_EQ(out.spans[1].depth, 0u);
  EXPECT_EQ(out.spans[1].start, 100);
  EXPECT_EQ(out.spans[1].end, 200);

  auto mem = [](CUpti_ActivityMemoryOperationType op, uint64_t bytes, uint64_t t) {
    return CUpti_ActivityMemory4{.kind = CUPTI_ACTIVITY_KIND_MEMORY2,
                                 .memoryOperationType = op,
                                 .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                 .bytes = bytes,
                                 .timestamp = t};
  };
  convert(c, out, mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 1000, 10),
          mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 500, 20),
          mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 1000, 30));
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
    auto launch =
        api_call_record(CUPTI_ACTIVITY_KIND_RUNTIME, 10, 5, uint64_t(t0), uint64_t(t0 + 1000), uint32_t(::gettid()));
    auto k = kernel_record(5, uint64_t(t0 + 5000), uint64_t(t0 + 9000), 7, "gemm");
    convert(c, out, launch, k);
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
