// The JSON importers on small handcrafted traces: exact time conversion,
// each Kineto mapping rule, Chrome-format details, the streaming reader's
// buffer boundaries, and every kind of malformed input.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "import/import_test_util.h"
#include "loupe/prof/trace_writer.h"
#include "profiler/test_files.h"
#include "run_command.h"

using namespace loupe::prof;
using loupe::test::all_spans;
using loupe::test::import_and_load;
using loupe::test::write_gzip;
using loupe::test::write_text;

namespace {

// ---------------------------------------------------------------------------
// Times

TEST(ImportTimes, MicrosecondTextBecomesExactNanoseconds) {
  loupe::test::TempDir dir;
  // 1681234567890123.456 us (April 2023) is 1681234567890123456 ns: a
  // double holds about 16 significant digits, so it cannot; the text can.
  // A fourth decimal rounds once (half away from zero), never twice.
  write_text(dir.file("t.json"), R"({"traceEvents": [
    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1681234567890123.456, "dur": 0.0015},
    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1681234567890123.4565, "dur": 2.0004},
    {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 1681234567890124, "dur": 1e3},
    {"ph": "X", "name": "d", "pid": 1, "tid": 1, "ts": "1681234567890125.5", "dur": "0.25"}
  ]})");
  TraceModel m = import_and_load(dir.file("t.json"), dir.file("t.db"));
  EXPECT_EQ(m.info.meta.at("origin_wall_ns"), "1681234567890123456");
  std::map<std::string, std::pair<int64_t, int64_t>> got;
  for (const auto& s : all_spans(m)) got[s.name] = {s.start, s.dur};
  EXPECT_EQ(got["a"], std::make_pair(int64_t(0), int64_t(2)));          // 1.5 ns rounds to 2
  EXPECT_EQ(got["b"], std::make_pair(int64_t(1), int64_t(2000)));       // .4565 us -> +1 ns; 2000.4 ns -> 2000
  EXPECT_EQ(got["c"], std::make_pair(int64_t(544), int64_t(1000000)));  // 1e3 us
  EXPECT_EQ(got["d"], std::make_pair(int64_t(2044), int64_t(250)));     // numbers written as strings
}

// A time that is a number but beyond what 64 bits of nanoseconds hold
// (1e+300 us) is out of range, like one beyond 146 years: the event is
// skipped and counted, not the trace refused as if it were not a number.
TEST(ImportTimes, AHugeNumberIsATimeOutOfRangeNotANonNumber) {
  loupe::test::TempDir dir;
  write_text(dir.file("t.json"), R"({"traceEvents": [
    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 2},
    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1e+300, "dur": 2},
    {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 12, "dur": -1e300},
    {"ph": "X", "name": "d", "pid": 1, "tid": 1, "ts": 14, "dur": 3}
  ]})");
  ImportResult r;
  TraceModel m = import_and_load(dir.file("t.json"), dir.file("t.db"), ImportFormat::auto_detect, &r);
  std::set<std::string> names;
  for (const auto& s : all_spans(m)) names.insert(s.name);
  EXPECT_EQ(names, (std::set<std::string>{"a", "d"}));
  EXPECT_EQ(r.skipped_by_kind.at("events with times outside +-2^62 ns (146 years)"), 2u);
}

// ---------------------------------------------------------------------------
// The Kineto mapping

const char* kKineto = R"JSON({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA Test GPU", "totalGlobalMem": 85899345920}],
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 100, "tid": 101, "ts": 1000, "dur": 900},
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 100, "tid": 101, "ts": 1010, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 100, "tid": 101, "ts": 1020, "dur": 50},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 101, "ts": 1030, "dur": 5, "args": {"correlation": 10}},
  {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 100, "tid": 102, "ts": 1000, "dur": 20},
  {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 100, "tid": 101, "ts": 1005, "dur": 300},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 101, "ts": 1200, "dur": 30, "args": {"correlation": 11}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpy", "pid": 100, "tid": 101, "ts": 1300, "dur": 40, "args": {"correlation": 12}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 101, "ts": 1400, "dur": 3, "args": {"correlation": 13}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 100, "tid": 101, "ts": 1500, "dur": 60, "args": {"correlation": 14}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 100, "tid": 101, "ts": 1600, "dur": 2, "args": {"correlation": 15}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 101, "ts": 1700, "dur": 4, "args": {}},
  {"ph": "s", "id": 16, "pid": 100, "tid": 101, "ts": 1700, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 1040, "dur": 80, "args": {"device": 0, "stream": 7, "correlation": 10}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": 7, "ts": 1210, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 11, "bytes": 4096}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 1310, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 12, "bytes": 1048576}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 9, "ts": 1401, "dur": 2, "args": {"device": 0, "stream": 9, "correlation": 13, "bytes": 512}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 1501, "dur": 58, "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": 14, "device": 0}},
  {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 1710, "dur": 5, "args": {"device": 0, "stream": 7}},
  {"ph": "f", "id": 16, "pid": 0, "tid": 7, "ts": 1710, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "forward", "pid": 0, "tid": 7, "ts": 1040, "dur": 300},
  {"ph": "X", "cat": "mystery_category", "name": "something new", "pid": 100, "tid": 101, "ts": 1800, "dur": 10},
  {"ph": "f", "id": 3, "pid": 100, "tid": 101, "ts": 1800, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 101, "ts": 1015, "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": 1048576, "Total Allocated": 3145728, "Total Reserved": 4194304}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 101, "ts": 1800, "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": -1048576, "Total Allocated": 2097152, "Total Reserved": 4194304}},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 101, "ts": 1801, "args": {"Device Type": 0, "Device Id": -1, "Addr": 8, "Bytes": 64, "Total Allocated": 64, "Total Reserved": 0}},
  {"name": "process_name", "ph": "M", "ts": 1000, "pid": 100, "tid": 0, "args": {"name": "python3"}},
  {"name": "thread_name", "ph": "M", "ts": 1000, "pid": 100, "tid": 101, "args": {"name": "thread 101 (python3)"}},
  {"name": "thread_name", "ph": "M", "ts": 1000, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
  {"ph": "X", "cat": "Trace", "ts": 990, "dur": 2000, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}
  ],
  "baseTimeNanoseconds": 1700000000000000000
})JSON";

class KinetoMapping : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(dir_.file("k.json"), kKineto);
    m_ = import_and_load(dir_.file("k.json"), dir_.file("k.db"), ImportFormat::auto_detect, &result_);
  }
  loupe::test::TempDir dir_;
  TraceModel m_;
  ImportResult result_;
};

TEST_F(KinetoMapping, DetectsKineto) { EXPECT_EQ(result_.format, ImportFormat::kineto); }

TEST_F(KinetoMapping, OriginIsTheEarliestEventOnTheWallClock) {
  // ts 990 us is the earliest event (the profiler's own span, skipped);
  // the earliest imported one is at 1000 us after baseTimeNanoseconds.
  EXPECT_EQ(m_.info.meta.at("origin_wall_ns"), std::to_string(1700000000000000000 + 1000 * 1000));
  EXPECT_EQ(m_.start_ns, 0);
}

TEST_F(KinetoMapping, DevicesAndStreams) {
  ASSERT_EQ(m_.devices.size(), 2u);
  EXPECT_EQ(m_.devices[0].name, "NVIDIA Test GPU");
  EXPECT_EQ(m_.devices[0].kind, DeviceKind::cuda);
  EXPECT_EQ(m_.devices[0].memory_capacity, 85899345920);
  // The host's memory events (Device Type 0) make a device after the GPU.
  EXPECT_EQ(m_.devices[1].id, 1u);
  EXPECT_EQ(m_.devices[1].name, "cpu");
  EXPECT_EQ(m_.devices[1].kind, DeviceKind::cpu);
  ASSERT_EQ(m_.streams.size(), 2u);
  EXPECT_EQ(m_.streams[0].name, "stream 7");
  EXPECT_EQ(m_.streams[1].name, "stream 9");
}

TEST_F(KinetoMapping, ThreadsCarryProcessAndOsThreadIds) {
  ASSERT_EQ(m_.threads.size(), 2u);
  EXPECT_EQ(m_.threads[0].process, 100);
  EXPECT_EQ(m_.threads[0].os_tid, 101);
  EXPECT_EQ(m_.threads[0].name, "thread 101 (python3)");
  EXPECT_EQ(m_.threads[1].os_tid, 102);
  EXPECT_EQ(m_.threads[1].name, "python3 thread 102");
}

TEST_F(KinetoMapping, HostSpansNestAndKeepTheirKinds) {
  std::map<std::string, loupe::test::FlatSpan> by_name;
  for (const auto& s : all_spans(m_)) by_name.emplace(s.name, s);
  EXPECT_EQ(by_name.at("forward").depth, 0u);
  EXPECT_EQ(by_name.at("forward").kind, SpanKind::user);
  EXPECT_EQ(by_name.at("aten::linear").depth, 1u);
  EXPECT_EQ(by_name.at("aten::linear").kind, SpanKind::runtime);
  EXPECT_EQ(by_name.at("aten::addmm").depth, 2u);
  EXPECT_EQ(by_name.at("train.py(12): step").kind, SpanKind::user);
  EXPECT_EQ(by_name.at("train.py(12): step").depth, 0u);
  // A synchronising call is a wait; other runtime calls stay runtime spans;
  // an unknown category is kept as a generic host span.
  EXPECT_EQ(by_name.at("cudaStreamSynchronize").kind, SpanKind::wait);
  EXPECT_EQ(by_name.at("cudaStreamSynchronize").dur, 60000);
  EXPECT_EQ(by_name.at("cudaEventQuery").kind, SpanKind::runtime);
  EXPECT_EQ(by_name.at("something new").kind, SpanKind::runtime);
  // ProfilerStep#7 is a step, not a span.
  EXPECT_EQ(by_name.count("ProfilerStep#7"), 0u);
  ASSERT_EQ(m_.steps.size(), 1u);
  ASSERT_EQ(m_.steps[0].size(), 1u);
  EXPECT_EQ(m_.steps[0].number[0], 7);
  EXPECT_EQ(m_.steps[0].dur[0], 900000);
}

TEST_F(KinetoMapping, LaunchesJoinTheirDeviceOps) {
  std::map<uint64_t, std::tuple<std::string, uint32_t, uint32_t>> launches;
  for (const Launches& t : m_.launches) {
    for (size_t i = 0; i < t.size(); ++i) launches[t.correlation[i]] = {m_.str(t.name[i]), t.device[i], t.stream[i]};
  }
  ASSERT_EQ(launches.size(), 5u);
  EXPECT_EQ(launches[10], std::make_tuple(std::string("cudaLaunchKernel"), 0u, 7u));
  EXPECT_EQ(launches[13], std::make_tuple(std::string("cudaMemcpyAsync"), 0u, 9u));
  // The second kernel had no args.correlation: its ac2g flow links it.
  EXPECT_EQ(launches[16], std::make_tuple(std::string("cudaLaunchKernel"), 0u, 7u));
  std::map<std::string, uint64_t> op_correlation;
  for (const DeviceOps& t : m_.device_ops) {
    for (size_t i = 0; i < t.size(); ++i) op_correlation[m_.str(t.name[i])] = t.correlation[i];
  }
  EXPECT_EQ(op_correlation["relu_kernel"], 16u);
}

TEST_F(KinetoMapping, CopiesBecomeDeviceOpsAndTransfers) {
  struct Copy {
    CopyKind kind;
    int64_t bytes;
  };
  std::map<uint64_t, Copy> ops;
  for (const DeviceOps& t : m_.device_ops) {
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.kind[i] == DeviceOpKind::memcpy) ops[t.correlation[i]] = {t.copy_kind[i], t.bytes[i]};
    }
  }
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[11].kind, CopyKind::device_to_host);
  EXPECT_EQ(ops[11].bytes, 4096);
  EXPECT_EQ(ops[12].kind, CopyKind::host_to_device);

  ASSERT_EQ(m_.transfers.size(), 1u);
  const Transfers& t = m_.transfers[0];
  ASSERT_EQ(t.size(), 3u);
  std::map<uint64_t, size_t> at;
  for (size_t i = 0; i < t.size(); ++i) at[t.correlation[i]] = i;
  // cudaMemcpyAsync into pageable memory: synchronous all the same.
  size_t dtoh = at.at(11), sync_htod = at.at(12), async_htod = at.at(13);
  EXPECT_EQ(t.direction[dtoh], CopyKind::device_to_host);
  EXPECT_EQ(t.host_memory[dtoh], HostMemory::pageable);
  EXPECT_TRUE(t.synchronous[dtoh]);
  EXPECT_EQ(t.dur[dtoh], 30000);  // the host call's time
  // cudaMemcpy blocks; cudaMemcpyAsync from pinned memory does not.
  EXPECT_TRUE(t.synchronous[sync_htod]);
  EXPECT_EQ(t.host_memory[sync_htod], HostMemory::pinned);
  EXPECT_EQ(t.bytes[sync_htod], 1048576);
  EXPECT_FALSE(t.synchronous[async_htod]);
}

TEST_F(KinetoMapping, MemoryEventsCarryTheirTotals) {
  ASSERT_EQ(m_.memory.size(), 2u);
  const MemoryEvents& mem = m_.memory[0];
  EXPECT_EQ(mem.device, 0u);
  ASSERT_EQ(mem.size(), 2u);
  EXPECT_EQ(mem.kind[0], MemoryEventKind::alloc);
  EXPECT_EQ(mem.bytes[0], 1048576);
  EXPECT_EQ(mem.allocated[0], 3145728);
  EXPECT_EQ(mem.reserved[0], 4194304);
  EXPECT_EQ(mem.address[0], 4096u);
  EXPECT_EQ(mem.kind[1], MemoryEventKind::free);
  EXPECT_EQ(mem.bytes[1], 1048576);
  EXPECT_EQ(mem.allocated[1], 2097152);
  const MemoryEvents& host = m_.memory[1];
  EXPECT_EQ(host.device, 1u);
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host.kind[0], MemoryEventKind::alloc);
  EXPECT_EQ(host.bytes[0], 64);
  EXPECT_EQ(host.allocated[0], 64);
  EXPECT_EQ(host.address[0], 8u);
}

TEST_F(KinetoMapping, WhatIsNotImportedIsCounted) {
  EXPECT_EQ(result_.skipped_by_kind.at("gpu_user_annotation (user annotations repeated on GPU lanes)"), 1u);
  EXPECT_EQ(result_.skipped_by_kind.at("flow events other than ac2g (fwdbwd, ...)"), 1u);
  EXPECT_EQ(result_.skipped_by_kind.at("the profiler's own spans and markers (pid 'Spans', 'Traces')"), 1u);
  EXPECT_EQ(result_.skipped, 3u);
  EXPECT_EQ(m_.info.meta.at("skipped_events"), "3");
  EXPECT_EQ(result_.source_events, 30u);
}

// ---------------------------------------------------------------------------
// Chrome details

// How many of the host ops Kineto numbered the trace holds (docs/
// analyses.md, "Completeness"). Thread 1 holds 1, 2, 3 and thread 2 holds
// 100, 101 (a numbering per thread: 5 numbered), then one process-wide
// numbering that kept 1, 50 and 100 of 100; ids so far apart that their
// difference overflows 64 bits count as unbounded, not as a crash.
TEST(ImportKineto, HostOpNumberingCountsWhatIsHeldOfWhatWasNumbered) {
  loupe::test::TempDir dir;
  auto numbering = [&](const std::string& ops) {
    write_text(dir.file("k.json"), R"({"schemaVersion": 1, "traceEvents": [)" + ops + "]}");
    TraceModel m = import_and_load(dir.file("k.json"), dir.file("k.db"), ImportFormat::kineto);
    return m.info.meta[kMetaHostOpIds] + " of " + m.info.meta[kMetaHostOpIdSpan];
  };
  auto op = [](int tid, const std::string& id) {
    return R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": )" + std::to_string(tid) +
           R"(, "ts": 1, "dur": 1, "args": {"External id": )" + id + "}}";
  };
  EXPECT_EQ(numbering(op(1, "1") + "," + op(1, "2") + "," + op(1, "3") + "," + op(2, "100") + "," + op(2, "101")),
            "5 of 5");
  EXPECT_EQ(numbering(op(1, "1") + "," + op(2, "50") + "," + op(1, "100")), "3 of 100");
  EXPECT_EQ(numbering(op(1, "-9223372036854775807") + "," + op(1, "9223372036854775807")), "2 of 9223372036854775807");
  EXPECT_EQ(numbering(op(1, "7")), " of ");  // one op says nothing
}

// A copy's duration is the bytes over Kineto's own "memory bandwidth
// (GB/s)" when that lies within the microsecond a whole-microsecond "dur"
// was cut from (torchrec's 128-byte copy: "dur": 1, 0.06451612903225806
// GB/s, 1.984 us measured); a bandwidth that disagrees, "N/A" or a trace
// with nanoseconds already leave the written duration.
TEST(ImportKineto, ACopyTakesItsMeasuredDurationFromKinetosBandwidth) {
  loupe::test::TempDir dir;
  auto copy = [](int correlation, const std::string& ts, const std::string& dur, const std::string& bandwidth) {
    return std::string(R"j({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, )j") +
           R"j("tid": 7, "ts": )j" + ts + R"j(, "dur": )j" + dur +
           R"j(, "args": {"device": 0, "stream": 7, "correlation": )j" + std::to_string(correlation) +
           R"j(, "bytes": 128, "memory bandwidth (GB/s)": )j" + bandwidth + "}}";
  };
  const std::string measured_1984 = "0.06451612903225806";                           // 128 bytes over 1984 ns
  write_text(dir.file("k.json"), R"({"schemaVersion": 1, "traceEvents": [)" +        //
                                     copy(1, "100", "1", measured_1984) + "," +      // cut down to 1 us
                                     copy(2, "200", "1", "0.0256") + "," +           // 5000 ns: not within 1 us
                                     copy(3, "300", "1", R"("N/A")") + "," +         // no measured time
                                     copy(4, "400", "1.984", measured_1984) + "," +  // nanoseconds written
                                     copy(5, "500", "2", measured_1984) + "]}");     // shorter than written
  TraceModel m = import_and_load(dir.file("k.json"), dir.file("k.db"), ImportFormat::kineto);
  ASSERT_EQ(m.device_ops.size(), 1u);
  EXPECT_EQ(m.device_ops[0].dur, (std::vector<int64_t>{1984, 1000, 1000, 1984, 2000}));
}

// A kernel launch whose kernel the trace lacks is still a launch (on a
// device the trace does not say), not a host span that `loupe diff` would
// call new; a call that queues nothing stays a runtime span.
TEST(ImportKineto, ALaunchWithoutItsKernelIsStillALaunch) {
  loupe::test::TempDir dir;
  write_text(dir.file("k.json"), R"({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 4, "args": {"correlation": 5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 20, "dur": 4, "args": {"correlation": 6}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 1, "tid": 1, "ts": 30, "dur": 1, "args": {"correlation": 7}}
  ]})");
  TraceModel m = import_and_load(dir.file("k.json"), dir.file("k.db"), ImportFormat::kineto);
  std::vector<std::string> launches;
  for (const Launches& l : m.launches) {
    for (size_t i = 0; i < l.size(); ++i) {
      launches.push_back(m.str(l.name[i]));
      EXPECT_EQ(l.device[i], kUnknownDevice);
      EXPECT_EQ(l.stream[i], kUnknownStream);
    }
  }
  EXPECT_EQ(launches, (std::vector<std::string>{"cudaLaunchKernel", "cudaGraphLaunch"}));
  std::vector<std::string> spans;
  for (const auto& s : all_spans(m)) spans.push_back(s.name);
  EXPECT_EQ(spans, std::vector<std::string>{"cudaEventQuery"});
}

TEST(ImportChrome, BareArrayBeginEndPairsInstantsAndCounters) {
  loupe::test::TempDir dir;
  write_text(dir.file("c.json"), R"([
    {"ph": "B", "name": "outer", "pid": 1, "tid": 2, "ts": 10},
    {"ph": "B", "name": "inner", "pid": 1, "tid": 2, "ts": 12},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 15},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 20},
    {"ph": "E", "pid": 1, "tid": 3, "ts": 20},
    {"ph": "i", "name": "checkpoint", "pid": 1, "tid": 2, "ts": 13, "s": "t"},
    {"ph": "C", "name": "queue", "pid": 1, "ts": 11, "args": {"depth": 3}},
    {"ph": "C", "name": "mem", "pid": 1, "ts": 11, "args": {"used": 1.5, "free": 2}},
    {"ph": "P", "name": "sample", "pid": 1, "tid": 2, "ts": 14}
  ])");
  ImportResult r;
  TraceModel m = import_and_load(dir.file("c.json"), dir.file("c.db"), ImportFormat::auto_detect, &r);
  EXPECT_EQ(r.format, ImportFormat::chrome);
  auto spans = all_spans(m);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "outer");
  EXPECT_EQ(spans[0].dur, 10000);
  EXPECT_EQ(spans[0].depth, 0u);
  EXPECT_EQ(spans[1].name, "inner");
  EXPECT_EQ(spans[1].depth, 1u);
  ASSERT_EQ(m.instants.size(), 1u);
  std::map<std::string, double> counters;
  for (const Counter& c : m.counters) counters[m.str(c.name)] = c.value[0];
  EXPECT_EQ(counters.at("queue"), 3.0);
  EXPECT_EQ(counters.at("mem.used"), 1.5);
  EXPECT_EQ(counters.at("mem.free"), 2.0);
  EXPECT_EQ(r.skipped_by_kind.at("'E' events without a matching 'B'"), 1u);
  EXPECT_EQ(r.skipped_by_kind.at("events of phase 'P'"), 1u);
}

// ---------------------------------------------------------------------------
// The streaming reader: events across buffer refills, one event larger than
// the buffer, escapes, and the same document gzip-compressed.

TEST(ImportStreaming, EventsAcrossBufferBoundariesAndEscapes) {
  loupe::test::TempDir dir;
  std::string json = "{\n  \"otherData\": {\"nested\": [1, {\"x\": \"]}\"}]},\n  \"traceEvents\" :\n  [\n";
  const int n = 40000;                  // about 5 MB: more than one 4 MiB buffer
  std::string long_name(5 << 20, 'k');  // one event larger than the buffer
  for (int i = 0; i < n; ++i) {
    std::string name = i % 3 == 0   ? "quote \\\" back\\\\slash \\u00e9 {[ " + std::to_string(i)
                       : i == 20000 ? long_name
                                    : "op" + std::to_string(i % 17);
    json += "    {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + name +
            "\",\"pid\":7,\"tid\":8,\"ts\":" + std::to_string(1000 + i) +
            ".5,\"dur\":0.25,\"args\":{\"External id\":" + std::to_string(i) + "}}";
    json += i + 1 < n ? ",\n" : "\n";
  }
  json += "  ],\n  \"displayTimeUnit\": \"ms\"\n}\n";
  write_text(dir.file("s.json"), json);
  write_gzip(dir.file("s.json.gz"), json);
  std::vector<std::string> dumps;
  for (auto [in, threads] : {std::pair{"s.json", 0u}, {"s.json.gz", 0u}, {"s.json", 1u}, {"s.json", 3u}}) {
    SCOPED_TRACE(std::string(in) + " with " + std::to_string(threads) + " threads");
    ImportResult r = import_trace(dir.file(in), dir.file("s.db"), {.threads = threads});
    TraceModel m = load_trace(dir.file("s.db"));
    EXPECT_EQ(r.format, ImportFormat::kineto);
    EXPECT_EQ(r.input_bytes, json.size());
    auto spans = all_spans(m);
    ASSERT_EQ(spans.size(), size_t(n));
    std::set<std::string> names;
    for (const auto& s : spans) {
      names.insert(s.name);
      EXPECT_EQ(s.dur, 250);
    }
    EXPECT_TRUE(names.count("quote \" back\\slash \xc3\xa9 {[ 3"));
    EXPECT_TRUE(names.count(long_name));
    EXPECT_EQ(spans.back().start, int64_t(n - 1) * 1000);
    // Parsed on any number of threads, the trace is the same: same string
    // ids, same rows.
    std::string dump;
    for (size_t i = 0; i < m.strings.size(); i += 997) dump += m.strings[i].substr(0, 40) + "|";
    for (const auto& s : spans) dump += std::to_string(s.start) + "," + std::to_string(m.host_spans[0].name[0]) + ";";
    for (const HostSpans& t : m.host_spans) {
      for (StringId id : t.name) dump += std::to_string(id) + " ";
    }
    dumps.push_back(dump);
  }
  for (const std::string& d : dumps) EXPECT_EQ(d, dumps[0]);
}

// ---------------------------------------------------------------------------
// Malformed input: one error naming the file and where, no output left.

struct BadInput {
  const char* name;
  std::string content;
  bool gzip;
  const char* expected;  // part of the message
};

class MalformedInput : public ::testing::TestWithParam<BadInput> {};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.name; }

TEST_P(MalformedInput, FailsWithOneClearLine) {
  const BadInput& bad = GetParam();
  loupe::test::TempDir dir;
  std::string in = dir.file(std::string(bad.name) + (bad.gzip ? ".json.gz" : ".json"));
  if (bad.gzip) {
    write_gzip(in, bad.content);
  } else {
    write_text(in, bad.content);
  }
  std::string out = dir.file("out.db");
  try {
    import_trace(in, out);
    FAIL() << "imported a malformed file";
  } catch (const ImportError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(in), std::string::npos) << message;
    EXPECT_NE(message.find(bad.expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().string().find(".importing"), std::string::npos) << entry.path();
  }
}

const std::string kGood = R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})";

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedInput,
    ::testing::Values(
        BadInput{"empty", "", false, "the file is empty"},
        BadInput{"empty_gzip", "", true, "the JSON document is empty"},
        BadInput{"whitespace", "  \n ", false, "the JSON document is empty"},
        BadInput{"truncated_json", kGood.substr(0, 50), false, "at byte 50: truncated JSON"},
        BadInput{"truncated_in_array",
                 R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}, )", false,
                 "truncated JSON: the document ends inside the traceEvents array"},
        BadInput{"truncated_object", R"({"traceEvents": [], "other": )", false, "truncated JSON"},
        BadInput{"ts_not_a_number", R"({"traceEvents": [{"ph": "X", "name": "a", "ts": "soon", "dur": 2}]})", false,
                 "at byte 17: bad event: 'ts' is not a number"},
        BadInput{"ph_not_a_string", R"({"traceEvents": [{"ph": 5, "name": "a", "ts": 1, "dur": 2}]})", false,
                 "'ph' is not a string"},
        BadInput{"pid_an_object", R"({"traceEvents": [{"ph": "X", "pid": {}, "ts": 1, "dur": 2}]})", false,
                 "'pid' is neither a number nor a string"},
        BadInput{"no_dur", R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1}]})", false, "has no 'dur'"},
        BadInput{"no_ts", R"({"traceEvents": [{"ph": "i", "name": "a"}]})", false, "has no 'ts'"},
        BadInput{"no_ph", R"({"traceEvents": [{"name": "a", "ts": 1}]})", false, "has no 'ph'"},
        BadInput{"element_not_object", R"({"traceEvents": [1, 2]})", false, "at byte 17: an element of the events"},
        BadInput{"not_a_trace", R"({"name": "package.json", "version": "1.0"})", false, "no 'traceEvents' array"},
        BadInput{"trace_events_not_array", R"({"traceEvents": {}})", false, "'traceEvents' is not an array"},
        BadInput{"scalar", R"("hello")", false, "a single value"},
        BadInput{"binary",
                 std::string("\x7f"
                             "ELF\x02\x01\x01",
                             7),
                 false, "not JSON"},
        BadInput{"bad_literal", R"({"traceEvents": [{"ph": "X", "name": tru, "ts": 1, "dur": 2}]})", false,
                 "at byte 17: bad event: 'name' is not a string"},
        BadInput{"invalid_utf8", "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"\xff\", \"ts\": 1, \"dur\": 2}]}",
                 false, "malformed JSON"},
        BadInput{"trailing_garbage", kGood + " xyz", false, "unexpected data after the end"},
        BadInput{"bad_device_properties", R"({"deviceProperties": 7, "traceEvents": []})", false,
                 "'deviceProperties' is not an array"}),
    [](const ::testing::TestParamInfo<BadInput>& param) { return std::string(param.param.name); });

TEST(MalformedInputGzip, TruncatedGzipStream) {
  loupe::test::TempDir dir;
  std::string json = "{\"traceEvents\": [";
  for (int i = 0; i < 2000; ++i) {
    json += "{\"ph\": \"X\", \"name\": \"e" + std::to_string(i * 7919 % 1000) + "\", \"ts\": " + std::to_string(i) +
            ", \"dur\": 1},";
  }
  json += "{\"ph\": \"i\", \"name\": \"end\", \"ts\": 1}]}";
  write_gzip(dir.file("full.json.gz"), json);
  std::string bytes = loupe::test::slurp(dir.file("full.json.gz"));
  write_text(dir.file("cut.json.gz"), bytes.substr(0, bytes.size() / 2));
  try {
    import_trace(dir.file("cut.json.gz"), dir.file("out.db"));
    FAIL() << "imported a truncated gzip file";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated gzip data"), std::string::npos) << e.what();
  }
  // Damaged in the middle: the inflater reports the corruption, with its offset.
  std::string damaged = bytes;
  for (size_t i = damaged.size() / 3; i < damaged.size() / 3 + 64; ++i) damaged[i] = char(~damaged[i]);
  write_text(dir.file("bad.json.gz"), damaged);
  EXPECT_THROW(import_trace(dir.file("bad.json.gz"), dir.file("out.db")), ImportError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.db")));
}

// gzip members written one after the other are one document, as gunzip
// reads them; a zlib stream (RFC 1950) is read too; a member whose CRC-32
// does not match its data is refused, not imported.
TEST(GzipInput, MembersZlibAndChecksum) {
  loupe::test::TempDir dir;
  std::string head = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 2},";
  std::string tail = "{\"ph\": \"X\", \"name\": \"b\", \"ts\": 5, \"dur\": 3}]}";
  write_gzip(dir.file("head.gz"), head);
  write_gzip(dir.file("tail.gz"), tail);
  write_text(dir.file("two.json.gz"),
             loupe::test::slurp(dir.file("head.gz")) + loupe::test::slurp(dir.file("tail.gz")));
  TraceModel two = import_and_load(dir.file("two.json.gz"), dir.file("two.db"));
  EXPECT_EQ(two.count_host_spans(), 2u);

  std::string json = head + tail;
  std::string packed(compressBound(uLong(json.size())), '\0');
  uLongf packed_size = uLongf(packed.size());
  ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                      reinterpret_cast<const Bytef*>(json.data()), uLong(json.size()), 6),
            Z_OK);
  write_text(dir.file("z.json"), packed.substr(0, packed_size));
  TraceModel z = import_and_load(dir.file("z.json"), dir.file("z.db"));
  EXPECT_EQ(z.count_host_spans(), 2u);

  std::string bytes = loupe::test::slurp(dir.file("head.gz")) + loupe::test::slurp(dir.file("tail.gz"));
  bytes[bytes.size() - 8] = char(~bytes[bytes.size() - 8]);  // the last member's CRC-32
  write_text(dir.file("crc.json.gz"), bytes);
  try {
    import_trace(dir.file("crc.json.gz"), dir.file("crc.db"));
    FAIL() << "imported gzip data whose checksum does not match";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("crc.db")));
}

TEST(MalformedInputFormat, WrongFormatForTheContent) {
  loupe::test::TempDir dir;
  write_text(dir.file("t.json"), kGood);
  auto error = [&](const std::string& in, ImportFormat format) -> std::string {
    try {
      import_trace(dir.file(in), dir.file("o.db"), {.format = format});
    } catch (const ImportError& e) {
      return e.what();
    }
    return "imported";
  };
  EXPECT_EQ(error("t.json", ImportFormat::nsys),
            dir.file("t.json") +
                ": --format nsys reads Nsight Systems SQLite files, and this is not a SQLite file; export one with "
                "'nsys export --type sqlite'");
  // A SQLite file that is no Nsight Systems export (here: a loupe trace),
  // whether asked for or detected.
  {
    TraceWriter w(dir.file("loupe.db"), {});
    w.close();
  }
  std::string unknown = dir.file("loupe.db") +
                        ": a SQLite file, but none loupe imports (Nsight Systems SQLite: a SQLite file with "
                        "CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, TARGET_INFO_GPU or CUDA_GPU_MEMORY_USAGE_EVENTS tables)";
  EXPECT_EQ(error("loupe.db", ImportFormat::auto_detect), unknown);
  EXPECT_EQ(error("loupe.db", ImportFormat::nsys), unknown);
  EXPECT_EQ(error("loupe.db", ImportFormat::kineto),
            dir.file("loupe.db") +
                ": --format kineto reads PyTorch profiler (Kineto) JSON files, and this is not a JSON file");
  EXPECT_FALSE(std::filesystem::exists(dir.file("o.db")));
  EXPECT_THROW(import_trace(dir.file("missing.json"), dir.file("o.db")), ImportError);
  EXPECT_THROW(parse_import_format("perfetto"), ImportError);
}

TEST(ImportFormats, EveryNameReadsBackAndTheDocumentListsEach) {
  for (std::string_view name : import_format_choices()) {
    EXPECT_EQ(import_format_name(parse_import_format(name)), name);
  }
  EXPECT_EQ(import_format_names(), "auto, kineto, jax, chrome, nsys, torch-memory, pprof-memory or xplane");
  EXPECT_EQ(import_format_container(ImportFormat::xplane), "protobuf");
  EXPECT_EQ(import_format_container(ImportFormat::torch_memory), "pickle");
  EXPECT_EQ(import_format_container(ImportFormat::pprof_memory), "protobuf");
  EXPECT_EQ(import_format_container(ImportFormat::nsys), "SQLite");
  EXPECT_EQ(import_format_container(ImportFormat::jax), "JSON");
  std::ifstream in(LOUPE_IMPORT_DOC);
  std::stringstream doc;
  doc << in.rdbuf();
  std::string table = import_formats_markdown();
  EXPECT_NE(doc.str().find(table), std::string::npos) << LOUPE_IMPORT_DOC << " should carry this table, as it is:\n\n"
                                                      << table;
}

}  // namespace

namespace {

// Damage anywhere must give a clean ImportError (or, where the damage
// happens to leave valid JSON, an import): never a crash, a hang or
// another exception. Truncations at every 13th byte and byte flips at every
// 17th of a small Kineto trace.
TEST(MalformedInputFuzz, TruncationsAndFlippedBytesNeverCrash) {
  loupe::test::TempDir dir;
  std::string good = kKineto;
  int imported = 0, rejected = 0;
  auto attempt = [&](const std::string& text) {
    write_text(dir.file("f.json"), text);
    try {
      import_trace(dir.file("f.json"), dir.file("f.db"), {.threads = 1});
      ++imported;
    } catch (const ImportError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      ++rejected;
    }
  };
  for (size_t cut = 0; cut < good.size(); cut += 13) attempt(good.substr(0, cut));
  const char flips[] = {'"', '{', '}', '[', ']', ',', ':', '\\', 'x', '\0', '9', ' '};
  for (size_t at = 0, k = 0; at < good.size(); at += 17, ++k) {
    std::string bad = good;
    bad[at] = flips[k % sizeof flips];
    attempt(bad);
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(imported, 0);
}

}  // namespace
