// What a captured run records: compiles with reasons, transfers with call
// sites, launches correlated with the device operations they started, and
// memory events whose totals match the allocator's, loaded back with
// load_trace and counted against what the program did.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "loupe/prof/capture.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"
#include "runtime_test_util.h"

namespace loupe::test {
namespace {

namespace prof = loupe::prof;

struct Lines {
  int upload = 0, item = 0, to_host = 0, step_op = 0;
};

// A small recorded program; returns the lines it recorded things at.
Lines run_program(const std::string& path, int steps) {
  Lines lines;
  prof::Capture capture({.path = path, .producer = "trace_test"});
  auto step = rt::jit("step",
                      [&](Array w, Array x) {
                        lines.step_op = __LINE__ + 1;
                        Array h = rt::tanh(rt::matmul(x, w));
                        return rt::sum(h * h);
                      },
                      {.arg_names = {"w", "x"}});
  lines.upload = __LINE__ + 1;
  Array w = rt::from_host(std::vector<float>(16 * 8, 0.1f).data(), {16, 8}, rt::f32);
  for (int i = 0; i < steps; ++i) {
    int64_t rows = i == steps - 1 ? 3 : 4;  // a ragged last batch
    Array x = rt::full({rows, 16}, 0.5);
    Array loss = step(w, x);
    lines.item = __LINE__ + 1;
    (void)loss.item<float>();
  }
  lines.to_host = __LINE__ + 1;
  (void)rt::exp(w).to_host();
  rt::synchronize(rt::default_device());
  capture.stop();
  return lines;
}

TEST(Trace, RecordsWhatTheProgramDid) {
  TempDir dir;
  std::string path = dir.file("run.db");
  const int steps = 6;
  Lines lines = run_program(path, steps);
  prof::TraceModel m = prof::load_trace(path);
  EXPECT_EQ(m.info.status, "complete");
  EXPECT_EQ(m.info.dropped_events, 0u);

  // Devices, streams and worker threads are named.
  const prof::Device* dev = m.device(0);
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->kind, prof::DeviceKind::cpu);
  EXPECT_GT(dev->memory_capacity, 0);
  EXPECT_EQ(dev->detail, rt::cpu_blas());  // the kernel set its matrix products ran with
  EXPECT_EQ(dev->detail.rfind("OpenBLAS ", 0), 0u) << dev->detail;
  ASSERT_NE(m.stream(0, 0), nullptr);
  EXPECT_EQ(m.stream(0, 0)->name, "compute");
  EXPECT_EQ(m.stream(0, 1)->name, "copy");
  std::set<std::string> thread_names;
  for (const prof::Thread& t : m.threads) thread_names.insert(t.name);
  EXPECT_TRUE(thread_names.count("cpu0 compute")) << ::testing::PrintToString(thread_names);
  EXPECT_TRUE(thread_names.count("cpu0 copy"));

  auto line_of = [&](uint32_t callsite) {
    const prof::CallSite* c = m.callsite(callsite);
    return c ? int(c->line) : -1;
  };

  // Compiles: one first compile, one miss for the ragged batch, hits between.
  int misses = 0, hits = 0;
  std::vector<std::string> reasons;
  for (const prof::Compiles& c : m.compiles)
    for (size_t i = 0; i < c.size(); ++i) {
      if (m.str(c.function[i]) != "step") continue;
      if (c.kind[i] == prof::CompileKind::miss) {
        ++misses;
        reasons.push_back(c.reason[i]);
        EXPECT_NE(c.ir[i].find("func step("), std::string::npos);
        EXPECT_GT(c.kernels[i], 0u);
        EXPECT_GT(c.trace_ns[i] + c.optimize_ns[i] + c.codegen_ns[i], 0);
      } else if (c.kind[i] == prof::CompileKind::hit) {
        ++hits;
      }
    }
  EXPECT_EQ(misses, 2);
  EXPECT_EQ(hits, steps - 2);
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[0], "first compile");
  EXPECT_EQ(reasons[1], "arg 1 `x`: now f32[3,16], before f32[4,16]");

  // Transfers: the upload (asynchronous), item() every step (synchronous,
  // implicit) and one explicit to_host, each at its line.
  int h2d = 0, items = 0, reads = 0;
  for (const prof::Transfers& t : m.transfers)
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.direction[i] == prof::CopyKind::host_to_device) {
        ++h2d;
        EXPECT_FALSE(t.synchronous[i]);
        EXPECT_EQ(line_of(t.callsite[i]), lines.upload);
        EXPECT_EQ(t.bytes[i], 16 * 8 * 4);
      } else if (t.direction[i] == prof::CopyKind::device_to_host) {
        EXPECT_TRUE(t.synchronous[i]);
        if (t.implicit[i]) {
          ++items;
          EXPECT_EQ(line_of(t.callsite[i]), lines.item);
          EXPECT_EQ(t.bytes[i], 4);
        } else {
          ++reads;
          EXPECT_EQ(line_of(t.callsite[i]), lines.to_host);
        }
      }
      EXPECT_NE(t.correlation[i], 0u);
    }
  EXPECT_EQ(h2d, 1);
  EXPECT_EQ(items, steps);
  EXPECT_EQ(reads, 1);

  // Every launch has exactly one device operation with its correlation id,
  // on the stream it was queued to, starting after it was queued.
  std::map<uint64_t, std::tuple<int64_t, uint32_t>> launched;  // correlation -> (start, stream)
  for (const prof::Launches& l : m.launches)
    for (size_t i = 0; i < l.size(); ++i) launched[l.correlation[i]] = {l.start[i], l.stream[i]};
  size_t kernels = 0, copies = 0;
  std::set<uint64_t> seen;
  for (const prof::DeviceOps& d : m.device_ops)
    for (size_t i = 0; i < d.size(); ++i) {
      if (d.kind[i] == prof::DeviceOpKind::sync) continue;
      ASSERT_TRUE(launched.count(d.correlation[i])) << m.str(d.name[i]);
      EXPECT_TRUE(seen.insert(d.correlation[i]).second);
      auto [start, stream] = launched[d.correlation[i]];
      EXPECT_EQ(stream, d.stream);
      EXPECT_GE(d.start[i], start);
      if (d.kind[i] == prof::DeviceOpKind::kernel) ++kernels;
      if (d.kind[i] == prof::DeviceOpKind::memcpy) {
        ++copies;
        EXPECT_EQ(d.stream, 1u);
        EXPECT_GT(d.bytes[i], 0);
      }
    }
  EXPECT_EQ(seen.size(), launched.size());
  EXPECT_EQ(copies, size_t(1 + steps + 1));  // upload, items, to_host
  EXPECT_GT(kernels, size_t(steps));

  // Memory: every allocation freed or still live, totals consistent, and a
  // jitted intermediate charged to the user's line inside the function.
  int64_t allocs = 0, frees = 0, last_allocated = -1;
  bool step_line_seen = false;
  for (const prof::MemoryEvents& e : m.memory)
    for (size_t i = 0; i < e.size(); ++i) {
      if (e.kind[i] == prof::MemoryEventKind::alloc) ++allocs;
      if (e.kind[i] == prof::MemoryEventKind::free) ++frees;
      EXPECT_LE(e.allocated[i], e.reserved[i]);
      if (e.kind[i] == prof::MemoryEventKind::alloc && line_of(e.callsite[i]) == lines.step_op) step_line_seen = true;
      last_allocated = e.allocated[i];
    }
  EXPECT_GT(allocs, steps);
  EXPECT_LE(frees, allocs);
  EXPECT_TRUE(step_line_seen);
  EXPECT_GE(last_allocated, 0);

  // Host phases: the jit call, compiler phases, waits for item().
  std::map<std::string, int> spans;
  for (const prof::HostSpans& h : m.host_spans)
    for (size_t i = 0; i < h.size(); ++i) ++spans[m.str(h.name[i])];
  EXPECT_EQ(spans["jit step"], steps);
  EXPECT_EQ(spans["trace"], 2);
  EXPECT_EQ(spans["optimize"], 2);
  EXPECT_EQ(spans["codegen"], 2);
  EXPECT_EQ(spans["item"], steps);
  EXPECT_EQ(spans["eager exp"], 1);
}

TEST(Trace, AllocatedTotalsMatchTheAllocator) {
  TempDir dir;
  std::string path = dir.file("mem.db");
  rt::Device dev = rt::cpu(7);
  int64_t final_allocated = 0;
  {
    prof::Capture capture({.path = path});
    std::vector<Array> keep;
    for (int i = 0; i < 20; ++i) keep.push_back(rt::ones({int64_t(100 * (i + 1))}, rt::f32, dev) * 2.0);
    keep.erase(keep.begin(), keep.begin() + 10);
    rt::synchronize(dev);
    final_allocated = rt::memory_stats(dev).allocated;
    capture.stop();
  }
  prof::TraceModel m = prof::load_trace(path);
  const prof::MemoryEvents* mem = nullptr;
  for (const auto& e : m.memory)
    if (e.device == 7) mem = &e;
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->allocated.back(), final_allocated);
  int64_t reserves = 0;
  for (size_t i = 0; i < mem->size(); ++i) reserves += mem->kind[i] == prof::MemoryEventKind::reserve;
  EXPECT_GE(reserves, 1);
}

// What the analyses read from a run besides the above: the capacity set
// while running (the memory rule compares the peak with it), each allocator
// retry as a wait span with the line that asked, each eager op's span with
// the user's line (tiny-kernels names it), and uploads from pinned memory
// as pinned.
TEST(Trace, CapacityRetriesEagerLinesAndPinnedUploads) {
  TempDir dir;
  std::string path = dir.file("t.db");
  rt::Device dev = rt::cpu(0);
  const int64_t before = rt::memory_stats(dev).capacity;
  int retry_line = 0, pinned_line = 0, pageable_line = 0;
  {
    prof::Capture capture({.path = path});
    rt::set_memory_capacity(dev, int64_t(48) << 20);
    {
      // 4 MiB: a 20 MiB segment, cached once freed.
      Array a = rt::ones({int64_t(1) << 20}, rt::f32, dev) * 2.0;
      a.block_until_ready();
    }
    // 40 MiB does not fit beside the cached segment: the cache is flushed.
    retry_line = __LINE__ + 1;
    Array big = rt::arange(0, double(int64_t(10) << 20), 1, rt::f32, dev);
    big.block_until_ready();
    rt::PinnedBuffer pinned(1024 * sizeof(float));
    std::fill_n(pinned.as<float>(), 1024, 3.0f);
    std::vector<float> host(1024, 3.0f);
    pinned_line = __LINE__ + 1;
    Array p = rt::from_host(pinned.data(), {1024}, rt::f32, dev);
    pageable_line = __LINE__ + 1;
    Array q = rt::from_host(host.data(), {1024}, rt::f32, dev);
    EXPECT_EQ(rt::sum(p - q).item<float>(), 0.0f);
    rt::synchronize(dev);
    capture.stop();
  }
  rt::set_memory_capacity(dev, before);

  prof::TraceModel m = prof::load_trace(path);
  ASSERT_NE(m.device(0), nullptr);
  EXPECT_EQ(m.device(0)->memory_capacity, int64_t(48) << 20);
  auto line_of = [&](uint32_t site) { return m.callsite(site) ? int(m.callsite(site)->line) : -1; };
  int retries = 0, eager_ops = 0;
  for (const prof::HostSpans& h : m.host_spans)
    for (size_t i = 0; i < h.size(); ++i) {
      if (m.str(h.name[i]) == "allocator retry") {
        ++retries;
        EXPECT_EQ(h.kind[i], prof::SpanKind::wait);
        EXPECT_EQ(line_of(h.callsite[i]), retry_line);
      }
      if (m.str(h.name[i]) == "eager iota" && line_of(h.callsite[i]) == retry_line) ++eager_ops;
    }
  EXPECT_EQ(retries, 1);
  EXPECT_EQ(eager_ops, 1);
  std::map<int, prof::HostMemory> uploads;
  for (const prof::Transfers& t : m.transfers)
    for (size_t i = 0; i < t.size(); ++i) uploads[line_of(t.callsite[i])] = t.host_memory[i];
  EXPECT_EQ(uploads[pinned_line], prof::HostMemory::pinned);
  EXPECT_EQ(uploads[pageable_line], prof::HostMemory::pageable);
}

}  // namespace
}  // namespace loupe::test
