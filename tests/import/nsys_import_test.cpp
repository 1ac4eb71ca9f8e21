// Nsight Systems SQLite exports, generated in NVIDIA's published schema by
// NsysExportWriter: the mapping of every table loupe reads, and damaged or
// hostile files.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "import/import_test_util.h"
#include "import/nsys_export_writer.h"
#include "profiler/test_files.h"

using namespace loupe::prof;
using loupe::test::NsysExportWriter;

namespace {

constexpr int64_t kPid = 4242, kTid = 4243;
constexpr int64_t kThread = NsysExportWriter::global_tid(kPid, kTid);
constexpr int64_t kMiB = 1 << 20;

// ENUM_CUDA_MEMCPY_OPER and ENUM_CUDA_MEM_KIND ids.
constexpr int64_t kHtoD = 1, kDtoH = 2;
constexpr int64_t kPageable = 1, kPinned = 2, kDevice = 3;

void write_export(const std::string& path) {
  NsysExportWriter w(path);
  w.create_schema();
  w.session_start(1700000000000000000);
  w.gpu(0, "NVIDIA H100 80GB HBM3", 85520809984);
  w.gpu(1, "NVIDIA H100 80GB HBM3", 85520809984);
  w.thread_name(kThread, "python");

  w.runtime(1000, 1010, kThread, 1, "cudaLaunchKernel_v7000");
  w.runtime(1100, 1110, kThread, 2, "cudaLaunchKernel_v7000");
  w.runtime(1200, 1500, kThread, 3, "cudaMemcpyAsync_v3020");
  w.runtime(1600, 1700, kThread, 4, "cudaMemcpy_v3020");
  w.runtime(1800, 1810, kThread, 5, "cudaMemcpyAsync_v3020");
  w.runtime(1900, 1905, kThread, 6, "cudaMemsetAsync_v3020");
  w.runtime(2000, 2300, kThread, 7, "cudaStreamSynchronize_v3020");
  w.runtime(2400, 2402, kThread, 8, "cudaEventQuery_v3020");
  w.runtime(2500, 2600, kThread, 9, "cudaDeviceSynchronize_v3020");

  w.kernel(1020, 1220, 0, 7, 1, "gemm_kernel");
  w.kernel(1150, 1250, 0, 13, 2, "relu_kernel");
  w.kernel(3000, 2990, 0, 7, 99, "broken_kernel");  // ends before it starts
  w.memcpy(1300, 1450, 0, 7, 3, 4096, kDtoH, kDevice, kPageable);
  w.memcpy(1620, 1690, 0, 7, 4, kMiB, kHtoD, kPinned, kDevice);
  w.memcpy(1820, 1830, 1, 20, 5, 512, kHtoD, kPinned, kDevice);
  w.memset(1910, 1920, 0, 7, 6, 256);
  w.sync(2000, 2300, 0, 7, 7, 3);

  w.nvtx(800, 2800, 60, kThread, "epoch");
  w.nvtx(900, 2700, 59, kThread, "train_step");
  w.nvtx(950, 1300, 59, kThread, "forward");
  w.nvtx(2650, -1, 34, kThread, "checkpoint");
  w.nvtx(100, -1, 75, kThread, "my domain");
  w.exec("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (2900, NULL, 59, 'open', " +
         std::to_string(kThread) + ")");

  w.memory(500, 0, 0x1000, kMiB, kDevice, 0);
  w.memory(600, 0, 0x2000, 2 * kMiB, kDevice, 0);
  w.memory(2000, 0, 0x1000, 0, kDevice, 1);    // a free that does not say its size
  w.memory(700, 0, 0x9000, 4096, kPinned, 0);  // pinned host memory
  w.close();
}

class NsysImport : public ::testing::Test {
 protected:
  void SetUp() override {
    write_export(dir_.file("report.sqlite"));
    m_ = loupe::test::import_and_load(dir_.file("report.sqlite"), dir_.file("r.db"), ImportFormat::auto_detect,
                                      &result_);
  }
  loupe::test::TempDir dir_;
  TraceModel m_;
  ImportResult result_;
};

TEST_F(NsysImport, DetectsTheFormatAndTheClock) {
  EXPECT_EQ(result_.format, ImportFormat::nsys);
  EXPECT_EQ(detect_import_format(dir_.file("report.sqlite")), ImportFormat::nsys);
  // The earliest event (the first allocation, at 500 ns) is time 0.
  EXPECT_EQ(m_.info.meta.at("origin_wall_ns"), "1700000000000000500");
  EXPECT_EQ(m_.info.status, "imported");
}

TEST_F(NsysImport, DevicesStreamsAndThreads) {
  ASSERT_EQ(m_.devices.size(), 2u);
  EXPECT_EQ(m_.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m_.devices[0].memory_capacity, 85520809984);
  EXPECT_EQ(m_.streams.size(), 3u);
  ASSERT_EQ(m_.threads.size(), 1u);
  EXPECT_EQ(m_.threads[0].process, kPid);
  EXPECT_EQ(m_.threads[0].os_tid, kTid);
  EXPECT_EQ(m_.threads[0].name, "python");
}

TEST_F(NsysImport, DeviceOpsAndBusyTime) {
  std::map<std::string, std::tuple<DeviceOpKind, CopyKind, int64_t>> ops;
  uint64_t count = 0;
  for (const DeviceOps& t : m_.device_ops) {
    count += t.size();
    for (size_t i = 0; i < t.size(); ++i) ops[m_.str(t.name[i])] = {t.kind[i], t.copy_kind[i], t.bytes[i]};
  }
  EXPECT_EQ(count, 6u);
  EXPECT_EQ(ops.size(), 5u);  // two copies share "Memcpy HtoD (Pinned -> Device)"
  EXPECT_EQ(ops["gemm_kernel"], std::make_tuple(DeviceOpKind::kernel, CopyKind::none, int64_t(0)));
  EXPECT_EQ(ops["Memcpy DtoH (Device -> Pageable)"],
            std::make_tuple(DeviceOpKind::memcpy, CopyKind::device_to_host, int64_t(4096)));
  EXPECT_EQ(ops["Memset (Device)"], std::make_tuple(DeviceOpKind::memset, CopyKind::none, int64_t(256)));
  // Device 0: [1020,1250] (two streams overlapping) + 150 + 70 + 10.
  std::map<uint32_t, int64_t> busy = loupe::test::busy_ns(m_);
  EXPECT_EQ(busy[0], 230 + 150 + 70 + 10);
  EXPECT_EQ(busy[1], 10);
  EXPECT_EQ(result_.skipped_by_kind.at("CUPTI_ACTIVITY_KIND_KERNEL rows that end before they start"), 1u);
}

TEST_F(NsysImport, ApiCallsBecomeLaunchesTransfersAndWaits) {
  uint64_t launches = 0;
  for (const Launches& t : m_.launches) {
    launches += t.size();
    for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(m_.str(t.name[i]).find("_v"), std::string::npos);
  }
  EXPECT_EQ(launches, 6u);
  ASSERT_EQ(m_.transfers.size(), 1u);
  const Transfers& t = m_.transfers[0];
  ASSERT_EQ(t.size(), 3u);
  std::map<uint64_t, size_t> at;
  for (size_t i = 0; i < t.size(); ++i) at[t.correlation[i]] = i;
  EXPECT_TRUE(t.synchronous[at[3]]);  // into pageable memory
  EXPECT_EQ(t.host_memory[at[3]], HostMemory::pageable);
  EXPECT_EQ(t.dur[at[3]], 300);       // the host call
  EXPECT_TRUE(t.synchronous[at[4]]);  // cudaMemcpy
  EXPECT_EQ(t.bytes[at[4]], kMiB);
  EXPECT_FALSE(t.synchronous[at[5]]);
  EXPECT_EQ(t.device[at[5]], 1u);
  std::map<std::string, SpanKind> kinds;
  for (const auto& s : loupe::test::all_spans(m_)) kinds[s.name] = s.kind;
  EXPECT_EQ(kinds.at("cudaStreamSynchronize"), SpanKind::wait);
  EXPECT_EQ(kinds.at("cudaDeviceSynchronize"), SpanKind::wait);
  EXPECT_EQ(kinds.at("cudaEventQuery"), SpanKind::runtime);
  // The one synchronisation record: cudaStreamSynchronize on stream 7.
  ASSERT_EQ(m_.syncs.size(), 1u);
  const Syncs& s = m_.syncs[0];
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.kind[0], SyncKind::stream);
  EXPECT_EQ(s.dur[0], 300);
  EXPECT_EQ(s.device[0], 0u);
  EXPECT_EQ(s.stream[0], 7u);
  EXPECT_EQ(s.event_stream[0], kUnknownStream);  // CUPTI names the event, not its stream
  EXPECT_EQ(s.recorded_at[0], kUnknownTime);
}

TEST_F(NsysImport, NvtxRangesNestAndMarksAreInstants) {
  std::map<std::string, uint32_t> depth;
  for (const auto& s : loupe::test::all_spans(m_)) {
    if (s.kind == SpanKind::user) depth[s.name] = s.depth;
  }
  EXPECT_EQ(depth, (std::map<std::string, uint32_t>{{"epoch", 0}, {"forward", 2}, {"train_step", 1}}));
  ASSERT_EQ(m_.instants.size(), 1u);
  EXPECT_EQ(m_.str(m_.instants[0].name[0]), "checkpoint");
  EXPECT_EQ(result_.skipped_by_kind.at("NVTX ranges that never ended"), 1u);
  EXPECT_EQ(result_.skipped_by_kind.at("NVTX_EVENTS rows other than marks and ranges (domains, categories, ...)"), 1u);
}

TEST_F(NsysImport, DeviceMemoryWithRunningTotals) {
  ASSERT_EQ(m_.memory.size(), 1u);
  const MemoryEvents& mem = m_.memory[0];
  ASSERT_EQ(mem.size(), 3u);
  EXPECT_EQ(mem.allocated, (std::vector<int64_t>{kMiB, 3 * kMiB, 2 * kMiB}));
  EXPECT_EQ(mem.kind[2], MemoryEventKind::free);
  EXPECT_EQ(mem.bytes[2], kMiB);  // the size of the block at that address
  EXPECT_EQ(result_.skipped_by_kind.at("CUDA_GPU_MEMORY_USAGE_EVENTS rows for host memory"), 1u);
}

// ---------------------------------------------------------------------------
// Damaged and hostile exports: one line naming the table, no output.

void expect_import_error(const std::string& in, const std::string& out, const std::string& expected) {
  try {
    import_trace(in, out);
    ADD_FAILURE() << "imported " << in;
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

// An export that `write` makes is refused with `expected`.
void expect_export_refused(const std::function<void(NsysExportWriter&)>& write, const std::string& expected) {
  loupe::test::TempDir dir;
  {
    NsysExportWriter w(dir.file("bad.sqlite"));
    write(w);
  }
  expect_import_error(dir.file("bad.sqlite"), dir.file("o.db"), expected);
}

TEST(NsysMalformed, MissingColumn) {
  expect_export_refused(
      [](NsysExportWriter& w) {
        w.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)");
        w.exec(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (begin_ns INTEGER, end INTEGER, deviceId INTEGER, "
            "streamId INTEGER)");
      },
      "table CUPTI_ACTIVITY_KIND_KERNEL: lacks column 'start'");
}

TEST(NsysMalformed, ViewInsteadOfTable) {
  expect_export_refused(
      [](NsysExportWriter& w) {
        w.create_schema();
        w.exec("DROP TABLE NVTX_EVENTS");
        w.exec(
            "CREATE VIEW NVTX_EVENTS AS SELECT start, end, 59 AS eventType, NULL AS text, 0 AS globalTid FROM "
            "CUPTI_ACTIVITY_KIND_RUNTIME");
      },
      "table NVTX_EVENTS: is a view, not a table");
}

TEST(NsysMalformed, WrongTypesAndDanglingStrings) {
  expect_export_refused(
      [](NsysExportWriter& w) {
        w.create_schema();
        w.exec(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, bytes, copyKind) "
            "VALUES ('soon', 10, 0, 1, 7, 64, 1)");
      },
      "table CUPTI_ACTIVITY_KIND_MEMCPY: row 1: column 'start' is not an integer");
  expect_export_refused(
      [](NsysExportWriter& w) {
        w.create_schema();
        w.kernel(0, 10, 0, 7, 1, "k");
        w.exec("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0, 5, 0, 1, 1, 777, 0, NULL)");
      },
      "table CUPTI_ACTIVITY_KIND_RUNTIME: row 1: column 'nameId' refers to string id 777");
}

TEST(NsysMalformed, TruncatedFile) {
  loupe::test::TempDir dir;
  write_export(dir.file("full.sqlite"));
  std::string bytes;
  {
    std::ifstream f(dir.file("full.sqlite"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  loupe::test::write_text(dir.file("cut.sqlite"), bytes.substr(0, bytes.size() / 2));
  expect_import_error(dir.file("cut.sqlite"), dir.file("o.db"), "truncated");
}

}  // namespace
