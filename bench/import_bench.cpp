// The import benchmarks' measuring tool. Each measurement runs in a
// process of its own, so that the peak memory belongs to it alone:
//
//   import_bench import IN OUT.db [T]  import (T parsing threads, 0 = auto);
//                                      one JSON line: bytes, time, MB/s,
//                                      peak memory over input size
//   import_bench model IN [T]          the same, into a model in memory (no
//                                      SQLite), as every reading command
//                                      imports a foreign trace
//   import_bench generate OUT.json N   write a synthetic Kineto trace of
//                                      about N bytes (a training loop like
//                                      the V100 fixture's)
//   import_bench idle TRACE.db         load; per device the busy time (the
//                                      union of its device ops), the active
//                                      window and the idle time, as JSON
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "covered_length.h"
#include "loupe/prof/import.h"
#include "loupe/prof/synth.h"
#include "loupe/prof/trace_reader.h"
#include "proc_status.h"

namespace {

using Clock = std::chrono::steady_clock;

// `out` empty: into a model in memory, as every reading command imports.
int run_import(const std::string& in, const std::string& out, unsigned threads) {
  int64_t rss_before = proc_status_bytes("VmRSS:");
  auto t0 = Clock::now();
  loupe::prof::ImportResult r;
  if (out.empty()) loupe::prof::import_model(in, {.threads = threads}, &r);
  else r = loupe::prof::import_trace(in, out, {.threads = threads});
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  int64_t peak = proc_status_bytes("VmHWM:");
  fmt::print(
      "{{\"format\": \"{}\", \"input_bytes\": {}, \"events\": {}, \"rows\": {}, \"seconds\": {:.4f}, "
      "\"read_seconds\": {:.4f}, \"map_seconds\": {:.4f}, \"write_seconds\": {:.4f}, \"mb_per_s\": {:.1f}, "
      "\"peak_rss_bytes\": {}, \"rss_before_bytes\": {}, \"peak_over_input\": {:.3f}}}\n",
      loupe::prof::import_format_name(r.format), r.input_bytes, r.source_events, r.rows_written, secs, r.read_seconds,
      r.map_seconds, r.write_seconds, double(r.input_bytes) / 1e6 / secs, peak, rss_before,
      double(peak) / double(std::max<uint64_t>(r.input_bytes, 1)));
  return 0;
}

int run_idle(const std::string& path) {
  auto t0 = Clock::now();
  loupe::prof::TraceModel m = loupe::prof::load_trace(path);
  double load = std::chrono::duration<double>(Clock::now() - t0).count();
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> intervals;
  for (const auto& t : m.device_ops) {
    for (size_t i = 0; i < t.size(); ++i) intervals[t.device].push_back({t.start[i], t.end(i)});
  }
  std::string devices;
  for (auto& [device, iv] : intervals) {
    int64_t first = iv[0].first, last = iv[0].second;
    for (const auto& [a, b] : iv) first = std::min(first, a), last = std::max(last, b);
    int64_t busy = loupe::test::covered_length(std::move(iv)), window = last - first;
    devices += fmt::format("{}{{\"device\": {}, \"busy_ns\": {}, \"window_ns\": {}, \"idle_ns\": {}}}",
                           devices.empty() ? "" : ", ", device, busy, window, window - busy);
  }
  double total = std::chrono::duration<double>(Clock::now() - t0).count();
  fmt::print("{{\"load_seconds\": {:.4f}, \"seconds\": {:.4f}, \"devices\": [{}]}}\n", load, total, devices);
  return 0;
}

// A Kineto trace shaped like the V100 fixture: per step, nested cpu_ops on
// the main thread, each launching kernels through cudaLaunchKernel with
// ac2g flows, device-to-device copies and memsets, [memory] events with
// their totals, and a ProfilerStep#N annotation; microsecond timestamps
// with three decimals, as recent Kineto writes them.
int run_generate(const std::string& path, uint64_t target_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 2;
  }
  std::string buf;
  buf.reserve(1 << 22);
  uint64_t written = 0;
  auto flush = [&] {
    std::fwrite(buf.data(), 1, buf.size(), f);
    written += buf.size();
    buf.clear();
  };
  const int64_t pid = 3911, tid = 3911, bwd_tid = 4012;
  auto us = [](int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); };
  buf +=
      "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", "
      "\"totalGlobalMem\": 85899345920, \"computeMajor\": 8, \"computeMinor\": 0, \"numSms\": 108}],\n"
      "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8},\n  \"traceEvents\": [\n";
  static const char* kOps[] = {"aten::linear",  "aten::addmm", "aten::layer_norm", "aten::gelu",   "aten::softmax",
                               "aten::dropout", "aten::add",   "aten::mul",        "aten::matmul", "aten::copy_"};
  static const char* kKernels[] = {
      "ampere_sgemm_128x64_tn",
      "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
      "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
      "at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
      "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
      "at::detail::Array<char*, 2>)",
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, "
      "float const*, float const*, float*, float*, float*)",
      "void cunn_SoftMaxForward<4, float, float, float, cunn::SoftMaxForwardEpilogue>(float*, float const*, int)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, "
      "3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"};
  loupe::prof::SplitMix64 rng{42};
  int64_t t = 1'700'000'000'000'000'000ll / 1000 * 1000;  // ns; printed as us with 3 decimals
  int64_t gpu = t;
  int64_t corr = 1, ext = 1, allocated = int64_t(8) << 30, reserved = int64_t(12) << 30;
  int64_t step = 0;
  bool first = true;
  auto event = [&](const std::string& e) {
    if (!first) buf += ",\n";
    first = false;
    buf += "    ";
    buf += e;
    if (buf.size() > (1 << 22) - 65536) flush();
  };
  while (written + buf.size() < target_bytes) {
    int64_t step_start = t;
    std::vector<std::string> later;  // GPU events, written after the step's CPU events as Kineto does
    for (int op = 0; op < 200 && written + buf.size() < target_bytes; ++op) {
      const char* name = kOps[rng.next() % 10];
      int64_t op_start = t, inner = t + rng.uniform(1000, 3000);
      int64_t launches = rng.uniform(1, 3);
      for (int64_t k = 0; k < launches; ++k) {
        int64_t ls = inner, ld = rng.uniform(3000, 9000);
        bool copy = rng.next() % 10 == 0, set = !copy && rng.next() % 25 == 0;
        const char* api = copy ? "cudaMemcpyAsync" : set ? "cudaMemsetAsync" : "cudaLaunchKernel";
        event(
            fmt::format("{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, "
                        "\"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"cbid\": 211, \"correlation\": "
                        "{}}}}}",
                        api, pid, tid, us(ls), us(ld), ext, corr));
        event(
            fmt::format("{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", "
                        "\"name\": \"ac2g\"}}",
                        corr, pid, tid, us(ls)));
        gpu = std::max(gpu, ls + ld + rng.uniform(2000, 20000));
        int64_t gd = rng.uniform(2000, 80000);
        if (copy) {
          later.push_back(fmt::format(
              "{{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoD (Device -> Device)\", \"pid\": 0, "
              "\"tid\": 7, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"device\": 0, \"context\": 1, "
              "\"stream\": 7, \"correlation\": {}, \"bytes\": {}, \"memory bandwidth (GB/s)\": 512.25}}}}",
              us(gpu), us(gd), ext, corr, rng.uniform(1, 1 << 24)));
        } else if (set) {
          later.push_back(fmt::format(
              "{{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0, \"tid\": 7, "
              "\"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"device\": 0, \"context\": 1, "
              "\"stream\": 7, \"correlation\": {}, \"bytes\": {}, \"memory bandwidth (GB/s)\": 91.5}}}}",
              us(gpu), us(gd / 10), ext, corr, rng.uniform(4, 1 << 20)));
        } else {
          later.push_back(fmt::format(
              "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": 0, \"tid\": 7, \"ts\": {}, \"dur\": "
              "{}, "
              "\"args\": {{\"External id\": {}, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, "
              "\"correlation\": {}, \"registers per thread\": 64, \"shared memory\": 0, \"blocks per SM\": 2.4, "
              "\"warps per SM\": 19.2, \"grid\": [264, 1, 1], \"block\": [256, 1, 1], "
              "\"est. achieved occupancy %\": 25}}}}",
              kKernels[rng.next() % 5], us(gpu), us(gd), ext, corr));
        }
        later.push_back(
            fmt::format("{{\"ph\": \"f\", \"id\": {}, \"pid\": 0, \"tid\": 7, \"ts\": {}, \"cat\": "
                        "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
                        corr, us(gpu)));
        gpu += gd;
        ++corr;
        inner = ls + ld + rng.uniform(500, 2000);
      }
      if (rng.next() % 3 == 0) {
        int64_t bytes = rng.uniform(512, 64 << 20) & ~int64_t(511);
        bool alloc = rng.next() % 2 == 0 || allocated < (int64_t(1) << 30);
        allocated += alloc ? bytes : -bytes;
        reserved = std::max<int64_t>(reserved, allocated + (int64_t(2) << 30));
        event(
            fmt::format("{{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", "
                        "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"args\": {{\"Device Type\": 1, \"Device Id\": 0, "
                        "\"Addr\": {}, \"Bytes\": {}, \"Total Allocated\": {}, \"Total Reserved\": {}}}}}",
                        pid, tid, us(inner), 139926520725504 + int64_t(rng.next() % (1ull << 32)),
                        alloc ? bytes : -bytes, allocated, reserved));
      }
      int64_t op_end = inner + rng.uniform(1000, 5000);
      event(
          fmt::format("{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, \"ts\": "
                      "{}, \"dur\": {}, \"args\": {{\"External id\": {}, \"Record function id\": 0, \"Sequence "
                      "number\": {}, \"Fwd thread id\": 0, \"Ev Idx\": {}}}}}",
                      name, pid, op % 4 == 3 ? bwd_tid : tid, us(op_start), us(op_end - op_start), ext, ext, ext));
      ++ext;
      t = op_end + rng.uniform(500, 4000);
    }
    for (const std::string& e : later) event(e);
    event(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", \"pid\": {}, "
                    "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}}}}}",
                    step++, pid, tid, us(step_start), us(t - step_start), ext++));
    t = std::max(t, gpu) + 100000;
  }
  buf += fmt::format(
      ",\n    {{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": {}, \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": "
      "\"python3\"}}}},\n    {{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": {}, \"pid\": 0, \"tid\": 7, "
      "\"args\": {{\"name\": \"stream 7 \"}}}}\n  ],\n  \"traceName\": \"synthetic\"\n}}\n",
      us(t), pid, us(t));
  flush();
  std::fclose(f);
  std::fprintf(stderr, "wrote %s: %llu bytes, %lld steps\n", path.c_str(), (unsigned long long)written,
               (long long)step);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "import" && (argc == 4 || argc == 5)) {
      return run_import(argv[2], argv[3], argc == 5 ? unsigned(std::atoi(argv[4])) : 0);
    }
    if (mode == "model" && (argc == 3 || argc == 4)) {
      return run_import(argv[2], "", argc == 4 ? unsigned(std::atoi(argv[3])) : 0);
    }
    if (mode == "idle" && argc == 3) return run_idle(argv[2]);
    if (mode == "generate" && argc == 4) return run_generate(argv[2], std::strtoull(argv[3], nullptr, 10));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "import_bench: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr,
               "usage: import_bench import IN OUT.db [THREADS] | model IN [THREADS] | generate OUT.json BYTES | "
               "idle TRACE.db\n");
  return 2;
}
