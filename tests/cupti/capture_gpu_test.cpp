// `loupe capture` on a real CUDA program: needs a GPU (label gpu); skips
// with the reason without one.
#include <gtest/gtest.h>

#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"
#include "run_command.h"

using namespace loupe::prof;

TEST(CaptureGpu, RecordsKernelsCopiesAndNvtxOfAnUnmodifiedProgram) {
  loupe::test::TempDir dir;
  auto probe = loupe::test::run_command({LOUPE_CUDA_WORKLOAD}, dir.path().string());
  if (probe.exit_code == 3) GTEST_SKIP() << "no usable GPU: " << probe.err;
  ASSERT_EQ(probe.exit_code, 0) << probe.err;

  std::string trace = dir.file("t.db");
  auto r =
      loupe::test::run_command({LOUPE_BIN, "capture", "-o", trace, "--", LOUPE_CUDA_WORKLOAD}, dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceModel m = load_trace(trace);
  // Counted from the program: 5 iterations x (2 kernels, 2 copies, 1 memset).
  uint64_t kernels = 0, h2d = 0, d2h = 0, memsets = 0;
  int64_t h2d_bytes = 0;
  for (const DeviceOps& ops : m.device_ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      kernels += ops.kind[i] == DeviceOpKind::kernel;
      memsets += ops.kind[i] == DeviceOpKind::memset;
      if (ops.copy_kind[i] == CopyKind::host_to_device) {
        ++h2d;
        h2d_bytes += ops.bytes[i];
      }
      d2h += ops.copy_kind[i] == CopyKind::device_to_host;
    }
  }
  EXPECT_EQ(kernels, 10u);
  EXPECT_EQ(h2d, 5u);
  EXPECT_EQ(d2h, 5u);
  EXPECT_EQ(memsets, 5u);
  EXPECT_EQ(h2d_bytes, 5 * (int64_t(1) << 20) * 4);
  uint64_t iterations = 0, launches = 0;
  for (const HostSpans& s : m.host_spans) {
    for (size_t i = 0; i < s.size(); ++i) iterations += m.str(s.name[i]) == "iteration";
  }
  for (const Launches& l : m.launches) launches += l.size();
  EXPECT_EQ(iterations, 5u) << "NVTX ranges reach the trace";
  EXPECT_GE(launches, 10u);
  uint64_t sync_copies = 0;
  for (const Transfers& t : m.transfers) {
    for (size_t i = 0; i < t.size(); ++i) sync_copies += t.synchronous[i] && t.host_memory[i] == HostMemory::pageable;
  }
  EXPECT_EQ(sync_copies, 10u);
  ASSERT_FALSE(m.devices.empty());
  EXPECT_EQ(m.devices[0].kind, DeviceKind::cuda);
  EXPECT_GT(m.devices[0].memory_capacity, 0);
}
