// Every field of every table survives TraceWriter -> file -> load_trace.
#include <gtest/gtest.h>
#include <unistd.h>

#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_writer.h"
#include "test_files.h"

using namespace loupe::prof;

namespace {

TEST(StoreRoundTrip, EveryFieldOfEveryTable) {
  loupe::test::TempDir dir;
  std::string path = dir.file("t.db");
  {
    WriterOptions wo;
    wo.producer = "roundtrip test";
    wo.origin_wall_ns = 1'700'000'000'123'456'789;
    wo.origin_monotonic_ns = 55;
    TraceWriter w(path, wo);
    StringId k1 = w.intern("kernel_a"), k2 = w.intern("kernel_b"), file = w.intern("src/x.cpp"),
             fn = w.intern("void f()"), sig = w.intern("f32[2,3]"), cn = w.intern("loss");
    EXPECT_EQ(w.intern("kernel_a"), k1) << "interning is idempotent";
    w.put(DeviceRow{.id = 0,
                    .name = "cpu0",
                    .kind = DeviceKind::cpu,
                    .memory_capacity = 2'147'483'648,
                    .copy_bandwidth = 10'000'000'000,
                    .detail = "OpenBLAS 0.3.21, Haswell kernels"});
    w.put(DeviceRow{.id = 3,
                    .name = "gpu3",
                    .kind = DeviceKind::cuda,
                    .memory_capacity = 80'000'000'000,
                    .copy_bandwidth = 25'000'000'000});
    w.put(StreamRow{.device = 3, .stream = 7, .name = "copy"});
    w.put(ThreadRow{.id = 0, .process = 100, .os_tid = 100, .name = "main", .dropped_events = 0});
    w.put(ThreadRow{.id = 5, .process = 100, .os_tid = 105, .name = "worker", .dropped_events = 17});
    w.put(CallSiteRow{.id = 1, .file = file, .line = 42, .function = fn});
    w.set_meta("status", "complete");
    w.set_meta("custom", "value with ' quote");

    w.add(HostSpanRow{
        .thread = 5, .start = 1000, .dur = 500, .name = k1, .kind = SpanKind::wait, .depth = 2, .callsite = 1});
    w.add(HostSpanRow{.thread = 5,
                      .start = 900,
                      .dur = 50,
                      .name = k2,
                      .kind = SpanKind::runtime,
                      .depth = 0,
                      .callsite = 0});  // out of order: the reader sorts
    w.add(HostSpanRow{
        .thread = 0, .start = 10, .dur = 5, .name = k2, .kind = SpanKind::compile, .depth = 1, .callsite = 0});
    w.add(InstantRow{.thread = 0, .time = 77, .name = k1, .kind = SpanKind::user});
    w.add(CounterRow{.name = cn, .time = 88, .value = 3.25});
    w.add(CounterRow{.name = cn, .time = 87, .value = -1.5});
    w.add(DeviceOpRow{.device = 3,
                      .stream = 7,
                      .start = 2000,
                      .dur = 300,
                      .kind = DeviceOpKind::memcpy,
                      .name = k2,
                      .bytes = 4096,
                      .copy_kind = CopyKind::device_to_host,
                      .correlation = 99});
    w.add(DeviceOpRow{.device = 3,
                      .stream = 7,
                      .start = 2000,
                      .dur = 10,
                      .kind = DeviceOpKind::kernel,
                      .name = k1,
                      .bytes = 0,
                      .copy_kind = CopyKind::none,
                      .correlation = 98});  // same start
    w.add(LaunchRow{.thread = 5, .start = 1900, .dur = 20, .name = k1, .device = 3, .stream = 7, .correlation = 98});
    w.add(TransferRow{.thread = 5,
                      .start = 1950,
                      .dur = 400,
                      .device = 3,
                      .direction = CopyKind::device_to_host,
                      .bytes = 4096,
                      .synchronous = true,
                      .implicit = true,
                      .host_memory = HostMemory::pageable,
                      .callsite = 1,
                      .correlation = 99});
    w.add(MemoryEventRow{.device = 3,
                         .time = 1500,
                         .kind = MemoryEventKind::retry,
                         .bytes = 1 << 20,
                         .address = 0xdeadbeef000,
                         .allocated = 123,
                         .reserved = 456,
                         .callsite = 1});
    CompileRow c;
    c.thread = 5;
    c.start = 100;
    c.dur = 800;
    c.function = fn;
    c.signature = sig;
    c.kind = CompileKind::miss;
    c.reason = "arg 0 `x`: now f32[2,3], before f32[2,4]";
    c.trace_ns = 11;
    c.optimize_ns = 22;
    c.codegen_ns = 33;
    c.nodes = 44;
    c.kernels = 5;
    c.ir = "%0 = add %a, %b";
    c.callsite = 1;
    c.function_object = 0xabcdef;
    w.add(c);
    w.add(StepRow{.thread = 0, .start = 5, .dur = 5000, .number = 7});
    w.commit();
    // A second commit adds to a track written in the first.
    w.add(DeviceOpRow{.device = 3,
                      .stream = 7,
                      .start = 2500,
                      .dur = 1,
                      .kind = DeviceOpKind::memset,
                      .name = k2,
                      .bytes = 64,
                      .copy_kind = CopyKind::none,
                      .correlation = 0});
    w.close();
  }

  TraceModel m = load_trace(path);
  EXPECT_EQ(m.info.format_major, kFormatMajor);
  EXPECT_EQ(m.info.format_minor, kFormatMinor);
  EXPECT_EQ(m.info.producer, "roundtrip test");
  EXPECT_EQ(m.info.status, "complete");
  EXPECT_EQ(m.info.origin_wall_ns, 1'700'000'000'123'456'789);
  EXPECT_EQ(m.info.meta.at("custom"), "value with ' quote");
  EXPECT_EQ(m.info.meta.at("origin_monotonic_ns"), "55");

  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[1].id, 3u);
  EXPECT_EQ(m.devices[1].name, "gpu3");
  EXPECT_EQ(m.devices[1].kind, DeviceKind::cuda);
  EXPECT_EQ(m.devices[1].memory_capacity, 80'000'000'000);
  EXPECT_EQ(m.devices[1].copy_bandwidth, 25'000'000'000);
  ASSERT_NE(m.device(0), nullptr);
  EXPECT_EQ(m.device(0)->memory_capacity, 2'147'483'648);
  EXPECT_EQ(m.device(0)->detail, "OpenBLAS 0.3.21, Haswell kernels");
  EXPECT_EQ(m.devices[1].detail, "");
  EXPECT_EQ(m.device(1), nullptr);
  ASSERT_EQ(m.streams.size(), 1u);
  EXPECT_EQ(m.stream(3, 7)->name, "copy");
  ASSERT_EQ(m.threads.size(), 2u);
  EXPECT_EQ(m.thread(5)->name, "worker");
  EXPECT_EQ(m.thread(5)->os_tid, 105);
  EXPECT_EQ(m.thread(5)->process, 100);
  EXPECT_EQ(m.thread(5)->dropped_events, 17u);
  ASSERT_EQ(m.callsites.size(), 1u);
  EXPECT_EQ(m.str(m.callsite(1)->file), "src/x.cpp");
  EXPECT_EQ(m.callsite(1)->line, 42u);
  EXPECT_EQ(m.str(m.callsite(1)->function), "void f()");

  ASSERT_EQ(m.host_spans.size(), 2u);  // threads 0 and 5
  const HostSpans& hs = m.host_spans[1];
  EXPECT_EQ(hs.thread, 5u);
  ASSERT_EQ(hs.size(), 2u);
  EXPECT_EQ(hs.start[0], 900);  // sorted by start
  EXPECT_EQ(hs.start[1], 1000);
  EXPECT_EQ(hs.dur[1], 500);
  EXPECT_EQ(m.str(hs.name[1]), "kernel_a");
  EXPECT_EQ(hs.kind[1], SpanKind::wait);
  EXPECT_EQ(hs.depth[1], 2u);
  EXPECT_EQ(hs.callsite[1], 1u);
  EXPECT_EQ(m.host_spans[0].kind[0], SpanKind::compile);

  ASSERT_EQ(m.instants.size(), 1u);
  EXPECT_EQ(m.instants[0].time[0], 77);
  EXPECT_EQ(m.str(m.instants[0].name[0]), "kernel_a");

  ASSERT_EQ(m.counters.size(), 1u);
  EXPECT_EQ(m.str(m.counters[0].name), "loss");
  ASSERT_EQ(m.counters[0].size(), 2u);
  EXPECT_EQ(m.counters[0].time[0], 87);
  EXPECT_DOUBLE_EQ(m.counters[0].value[0], -1.5);
  EXPECT_DOUBLE_EQ(m.counters[0].value[1], 3.25);

  ASSERT_EQ(m.device_ops.size(), 1u);
  const DeviceOps& ops = m.device_ops[0];
  EXPECT_EQ(ops.device, 3u);
  EXPECT_EQ(ops.stream, 7u);
  ASSERT_EQ(ops.size(), 3u);
  // Equal starts keep the order they were written in.
  EXPECT_EQ(ops.kind[0], DeviceOpKind::memcpy);
  EXPECT_EQ(ops.bytes[0], 4096);
  EXPECT_EQ(ops.copy_kind[0], CopyKind::device_to_host);
  EXPECT_EQ(ops.correlation[0], 99u);
  EXPECT_EQ(ops.dur[0], 300);
  EXPECT_EQ(ops.kind[1], DeviceOpKind::kernel);
  EXPECT_EQ(m.str(ops.name[1]), "kernel_a");
  EXPECT_EQ(ops.kind[2], DeviceOpKind::memset);
  EXPECT_EQ(ops.start[2], 2500);

  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].thread, 5u);
  EXPECT_EQ(m.launches[0].start[0], 1900);
  EXPECT_EQ(m.launches[0].dur[0], 20);
  EXPECT_EQ(m.launches[0].device[0], 3u);
  EXPECT_EQ(m.launches[0].stream[0], 7u);
  EXPECT_EQ(m.launches[0].correlation[0], 98u);

  ASSERT_EQ(m.transfers.size(), 1u);
  const Transfers& tr = m.transfers[0];
  EXPECT_EQ(tr.start[0], 1950);
  EXPECT_EQ(tr.dur[0], 400);
  EXPECT_EQ(tr.device[0], 3u);
  EXPECT_EQ(tr.direction[0], CopyKind::device_to_host);
  EXPECT_EQ(tr.bytes[0], 4096);
  EXPECT_TRUE(tr.synchronous[0]);
  EXPECT_TRUE(tr.implicit[0]);
  EXPECT_EQ(tr.host_memory[0], HostMemory::pageable);
  EXPECT_EQ(tr.callsite[0], 1u);
  EXPECT_EQ(tr.correlation[0], 99u);

  ASSERT_EQ(m.memory.size(), 1u);
  const MemoryEvents& me = m.memory[0];
  EXPECT_EQ(me.device, 3u);
  EXPECT_EQ(me.time[0], 1500);
  EXPECT_EQ(me.kind[0], MemoryEventKind::retry);
  EXPECT_EQ(me.bytes[0], 1 << 20);
  EXPECT_EQ(me.address[0], 0xdeadbeef000u);
  EXPECT_EQ(me.allocated[0], 123);
  EXPECT_EQ(me.reserved[0], 456);
  EXPECT_EQ(me.callsite[0], 1u);

  ASSERT_EQ(m.compiles.size(), 1u);
  const Compiles& cs = m.compiles[0];
  EXPECT_EQ(cs.start[0], 100);
  EXPECT_EQ(cs.dur[0], 800);
  EXPECT_EQ(m.str(cs.function[0]), "void f()");
  EXPECT_EQ(m.str(cs.signature[0]), "f32[2,3]");
  EXPECT_EQ(cs.kind[0], CompileKind::miss);
  EXPECT_EQ(cs.reason[0], "arg 0 `x`: now f32[2,3], before f32[2,4]");
  EXPECT_EQ(cs.trace_ns[0], 11);
  EXPECT_EQ(cs.optimize_ns[0], 22);
  EXPECT_EQ(cs.codegen_ns[0], 33);
  EXPECT_EQ(cs.nodes[0], 44u);
  EXPECT_EQ(cs.kernels[0], 5u);
  EXPECT_EQ(cs.ir[0], "%0 = add %a, %b");
  EXPECT_EQ(cs.callsite[0], 1u);
  EXPECT_EQ(cs.function_object[0], 0xabcdefu);

  ASSERT_EQ(m.steps.size(), 1u);
  EXPECT_EQ(m.steps[0].start[0], 5);
  EXPECT_EQ(m.steps[0].dur[0], 5000);
  EXPECT_EQ(m.steps[0].number[0], 7);

  EXPECT_EQ(m.total_events(), 14u);
  EXPECT_EQ(m.start_ns, 5);
  EXPECT_EQ(m.end_ns, 5005);
}

TEST(StoreRoundTrip, ParallelAndSerialLoadsAgreeOnLargeTracks) {
  loupe::test::TempDir dir;
  std::string path = dir.file("big.db");
  const int kOps = 700'000;  // > the loader's split size: tracks are read in pieces
  {
    TraceWriter w(path, {});
    StringId a = w.intern("a"), b = w.intern("b");
    for (int i = 0; i < kOps; ++i) {
      w.add(DeviceOpRow{.device = 0,
                        .stream = uint32_t(i % 3 == 0),
                        .start = int64_t(i) * 10,
                        .dur = 5,
                        .kind = DeviceOpKind::kernel,
                        .name = i % 2 ? a : b,
                        .bytes = i,
                        .copy_kind = CopyKind::none,
                        .correlation = uint64_t(i)});
    }
    w.set_meta("status", "complete");
    w.close();
  }
  TraceModel serial = load_trace(path, {.threads = 1});
  TraceModel parallel = load_trace(path, {.threads = 4});
  ASSERT_EQ(serial.device_ops.size(), 2u);
  ASSERT_EQ(parallel.device_ops.size(), 2u);
  uint64_t total = 0;
  for (size_t t = 0; t < 2; ++t) {
    const DeviceOps& x = serial.device_ops[t];
    const DeviceOps& y = parallel.device_ops[t];
    EXPECT_EQ(x.start, y.start);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.correlation, y.correlation);
    EXPECT_TRUE(std::is_sorted(x.start.begin(), x.start.end()));
    total += x.size();
  }
  EXPECT_EQ(total, uint64_t(kOps));
  EXPECT_EQ(serial.device_ops[1].size(), uint64_t((kOps + 2) / 3));  // i % 3 == 0 -> stream 1
}

// A launch track read in several pieces is joined into one track per
// thread. (Launches carry per-row device and stream columns, which the
// joining once took for the track's key: one thread's launches came back
// as two tracks.)
TEST(StoreRoundTrip, ALargeLaunchTrackReadInPiecesIsOneTrack) {
  loupe::test::TempDir dir;
  std::string path = dir.file("launches.db");
  const int kLaunches = 600'000;  // more than two of the loader's pieces
  {
    TraceWriter w(path, {});
    StringId name = w.intern("cudaLaunchKernel");
    for (int i = 0; i < kLaunches; ++i) {
      // Streams differ between the pieces: the first launches go to stream 1.
      w.add(LaunchRow{.thread = 3,
                      .start = int64_t(i) * 10,
                      .dur = 4,
                      .name = name,
                      .device = uint32_t(i % 2),
                      .stream = uint32_t(i < 100 ? 1 : 0),
                      .correlation = uint64_t(i + 1)});
    }
    w.set_meta("status", "complete");
    w.close();
  }
  for (unsigned threads : {1u, 4u}) {
    TraceModel m = load_trace(path, {.threads = threads});
    ASSERT_EQ(m.launches.size(), 1u) << threads << " threads";
    EXPECT_EQ(m.launches[0].thread, 3u);
    ASSERT_EQ(m.launches[0].size(), size_t(kLaunches));
    EXPECT_TRUE(std::is_sorted(m.launches[0].start.begin(), m.launches[0].start.end()));
    EXPECT_EQ(m.launches[0].stream[12], 1u);
    EXPECT_EQ(m.launches[0].stream[kLaunches - 1], 0u);
    EXPECT_EQ(m.launches[0].correlation.back(), uint64_t(kLaunches));
  }
}

TEST(StoreRoundTrip, BytesPerEventStayCompact) {
  // The clustered layout keeps a realistic event row small on disk.
  loupe::test::TempDir dir;
  std::string path = dir.file("size.db");
  const int kOps = 200'000;
  {
    TraceWriter w(path, {});
    StringId names[8];
    for (int i = 0; i < 8; ++i) names[i] = w.intern("kernel_" + std::to_string(i));
    int64_t t = 1'000'000'000;
    for (int i = 0; i < kOps; ++i) {
      t += 3'000 + (i * 7919) % 20'000;
      w.add(DeviceOpRow{.device = uint32_t(i % 2),
                        .stream = uint32_t(i % 4),
                        .start = t,
                        .dur = 5'000 + (i * 31) % 90'000,
                        .kind = DeviceOpKind::kernel,
                        .name = names[i % 8],
                        .bytes = 0,
                        .copy_kind = CopyKind::none,
                        .correlation = uint64_t(i + 1)});
      if (i % 50'000 == 0) w.commit();
    }
    w.close();
  }
  double bytes_per_event = double(std::filesystem::file_size(path)) / kOps;
  EXPECT_LT(bytes_per_event, 40.0);
}

}  // namespace
