// JAX profiler traces: a real CPU trace recorded here with a recompile
// (tests/import/fixtures/record_jax_trace.py), and a GPU trace written by
// hand in the layout XLA's CUPTI collector produces (no GPU trace can be
// recorded on this machine; the layout follows xla/backends/profiler/gpu).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "import/import_test_util.h"
#include "profiler/test_files.h"

using namespace loupe::prof;

namespace {

struct CompileCall {
  std::string function;
  CompileKind kind;
  int64_t dur, trace_ns, codegen_ns;
  std::string reason;
};

std::vector<CompileCall> compile_calls(const TraceModel& m) {
  std::vector<std::pair<int64_t, CompileCall>> rows;
  for (const Compiles& t : m.compiles) {
    for (size_t i = 0; i < t.size(); ++i) {
      rows.push_back(
          {t.start[i], {m.str(t.function[i]), t.kind[i], t.dur[i], t.trace_ns[i], t.codegen_ns[i], t.reason[i]}});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CompileCall> out;
  for (auto& [start, c] : rows) out.push_back(c);
  return out;
}

TEST(JaxImport, RecordedCpuTraceShowsTheRecompile) {
  std::string fixture = std::string(LOUPE_IMPORT_FIXTURES) + "/jax_cpu_recompile.json.gz";
  loupe::test::TempDir dir;
  ImportResult r;
  TraceModel m = loupe::test::import_and_load(fixture, dir.file("j.db"), ImportFormat::auto_detect, &r);
  EXPECT_EQ(r.format, ImportFormat::jax);
  // 1,345 complete events and 14 metadata events (counted in the JSON);
  // the trailing "{}" XLA writes is no event.
  EXPECT_EQ(r.source_events, 1359u);
  EXPECT_EQ(r.skipped, 0u);

  std::vector<CompileCall> calls = compile_calls(m);
  std::map<std::string, int> misses, hits;
  for (const auto& c : calls) (c.kind == CompileKind::miss ? misses : hits)[c.function]++;
  // f was compiled for shape 8 before the trace; 12 and 16 compile again,
  // and so does jnp.ones's broadcast for each new shape.
  EXPECT_EQ(misses, (std::map<std::string, int>{{"broadcast_in_dim", 2}, {"f", 2}}));
  EXPECT_EQ(hits, (std::map<std::string, int>{{"broadcast_in_dim", 3}, {"convert_element_type", 5}, {"f", 3}}));
  int f_misses = 0;
  for (const auto& c : calls) {
    if (c.kind != CompileKind::miss) continue;
    EXPECT_GT(c.codegen_ns, 0);  // backend_compile_and_load
    EXPECT_GT(c.trace_ns, 0);    // tracing and lower_sharding_computation
    EXPECT_GE(c.dur, c.trace_ns + c.codegen_ns - 1000);
    if (c.function == "f") {
      EXPECT_EQ(c.reason, ++f_misses == 1 ? "first compile in the trace"
                                          : "compiled again (the trace records no input signature: a new shape, "
                                            "dtype or static argument, or a new function object)");
    }
  }

  // Every complete event is a host span; the compiler's work is marked.
  uint64_t spans = 0, compile_spans = 0;
  for (const HostSpans& t : m.host_spans) {
    spans += t.size();
    for (SpanKind k : t.kind) compile_spans += k == SpanKind::compile;
  }
  EXPECT_EQ(spans, 1345u);
  EXPECT_GT(compile_spans, 500u);
  bool python = false, compiler = false;
  for (const Thread& t : m.threads) {
    python |= t.name == "python3";
    compiler |= t.name.starts_with("tf_PjRtCompilerThreadPool");
  }
  EXPECT_TRUE(python);
  EXPECT_TRUE(compiler);
  EXPECT_TRUE(m.device_ops.empty());  // a CPU trace has no device lanes
}

const char* kJaxGpu = R"JSON({"displayTimeUnit": "ns", "traceEvents": [
  {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
  {"ph": "M", "pid": 1, "tid": 14, "name": "thread_name", "args": {"name": "Stream #14(Kernel,MemcpyH2D)"}},
  {"ph": "M", "pid": 1, "tid": 15, "name": "thread_name", "args": {"name": "Stream #15(MemcpyD2H)"}},
  {"ph": "M", "pid": 1, "tid": 9001, "name": "thread_name", "args": {"name": "XLA Ops"}},
  {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/host:CUPTI"}},
  {"ph": "M", "pid": 2, "tid": 77, "name": "thread_name", "args": {"name": "Host Threads/77"}},
  {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "/host:CPU"}},
  {"ph": "M", "pid": 3, "tid": 77, "name": "thread_name", "args": {"name": "python3"}},
  {"ph": "X", "pid": 3, "tid": 77, "ts": 5.0, "dur": 100.0, "name": "train", "args": {"step_num": "4"}},
  {"ph": "X", "pid": 3, "tid": 77, "ts": 10.0, "dur": 50.0, "name": "PjitFunction(step)"},
  {"ph": "X", "pid": 2, "tid": 77, "ts": 12.0, "dur": 3.0, "name": "cuMemcpyHtoDAsync_v2", "args": {"correlation_id": "101", "device_id": "0"}},
  {"ph": "X", "pid": 2, "tid": 77, "ts": 16.0, "dur": 2.5, "name": "cuLaunchKernel", "args": {"correlation_id": "102", "device_id": "0"}},
  {"ph": "X", "pid": 2, "tid": 77, "ts": 19.0, "dur": 30.0, "name": "cuMemcpyDtoH_v2", "args": {"correlation_id": "103", "device_id": "0"}},
  {"ph": "X", "pid": 2, "tid": 77, "ts": 50.0, "dur": 4.0, "name": "cuStreamSynchronize", "args": {"correlation_id": "104"}},
  {"ph": "X", "pid": 1, "tid": 14, "ts": 13.0, "dur": 2.0, "name": "MemcpyH2D", "args": {"correlation_id": "101", "memcpy_details": "kind_src:pinned kind_dst:device size:65536 dest:0 async:1"}},
  {"ph": "X", "pid": 1, "tid": 14, "ts": 20.0, "dur": 8.5, "name": "fusion_kernel_1", "args": {"correlation_id": "102", "kernel_details": "regs:32 static_shared:0 grid:108,1,1 block:256,1,1"}},
  {"ph": "X", "pid": 1, "tid": 15, "ts": 29.0, "dur": 6.0, "name": "MemcpyD2H", "args": {"correlation_id": "103", "memcpy_details": "kind_src:device kind_dst:pageable size:4 dest:0 async:0"}},
  {"ph": "X", "pid": 1, "tid": 9001, "ts": 20.0, "dur": 8.5, "name": "fusion.1"},
  {}]})JSON";

TEST(JaxImport, GpuLanesInXlaLayout) {
  loupe::test::TempDir dir;
  loupe::test::write_text(dir.file("g.json"), kJaxGpu);
  ImportResult r;
  TraceModel m = loupe::test::import_and_load(dir.file("g.json"), dir.file("g.db"), ImportFormat::auto_detect, &r);
  EXPECT_EQ(r.format, ImportFormat::jax);
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].name, "/device:GPU:0");
  ASSERT_EQ(m.streams.size(), 2u);
  EXPECT_EQ(m.streams[0].stream, 14u);

  std::map<std::string, std::tuple<DeviceOpKind, CopyKind, int64_t, uint64_t>> ops;
  for (const DeviceOps& t : m.device_ops) {
    for (size_t i = 0; i < t.size(); ++i) {
      ops[m.str(t.name[i])] = {t.kind[i], t.copy_kind[i], t.bytes[i], t.correlation[i]};
    }
  }
  ASSERT_EQ(ops.size(), 3u);  // "XLA Ops" repeats the kernel: skipped
  EXPECT_EQ(ops["MemcpyH2D"], std::make_tuple(DeviceOpKind::memcpy, CopyKind::host_to_device, int64_t(65536), 101ull));
  EXPECT_EQ(ops["fusion_kernel_1"], std::make_tuple(DeviceOpKind::kernel, CopyKind::none, int64_t(0), 102ull));
  EXPECT_EQ(ops["MemcpyD2H"], std::make_tuple(DeviceOpKind::memcpy, CopyKind::device_to_host, int64_t(4), 103ull));
  EXPECT_EQ(r.skipped_by_kind.at("events on derived device lines (XLA Ops, XLA Modules, Steps, ...)"), 1u);

  uint64_t launches = 0;
  for (const Launches& t : m.launches) launches += t.size();
  EXPECT_EQ(launches, 3u);
  ASSERT_EQ(m.transfers.size(), 1u);
  const Transfers& t = m.transfers[0];
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.host_memory[0], HostMemory::pinned);
  EXPECT_FALSE(t.synchronous[0]);  // cuMemcpyHtoDAsync
  EXPECT_EQ(t.host_memory[1], HostMemory::pageable);
  EXPECT_TRUE(t.synchronous[1]);  // cuMemcpyDtoH: blocking
  bool waited = false;
  for (const auto& s : loupe::test::all_spans(m)) waited |= s.name == "cuStreamSynchronize" && s.kind == SpanKind::wait;
  EXPECT_TRUE(waited);
  ASSERT_EQ(m.steps.size(), 1u);
  EXPECT_EQ(m.steps[0].number[0], 4);
  std::vector<CompileCall> calls = compile_calls(m);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].function, "step");
  EXPECT_EQ(calls[0].kind, CompileKind::hit);
}

}  // namespace
