// The runtime's figures for bench/run: the MLP training step
// (784-1024-1024-10, batch 256, AdamW, f32) compiled, run jitted and
// eagerly, and run with a capture on and off in the same process: the
// steady state of a capture apart from its start-up (opening the trace
// and, in the process's first capture on a GPU, switching CUPTI on). Prints
// one JSON object; bench/run_runtime.py and scripts/gpu-check turn it into
// table rows.
//
// A step is timed two ways. `step_ms` queues steps back to back and waits
// once per block, as bench/jax_mlp.py and bench/torch_mlp.py time JAX and
// PyTorch: the host queues the next step while the device runs this one,
// so it is the step's throughput, the figure to set beside theirs.
// `step_waited_ms` waits for every step: the host's work and the device's
// add up, so a capture's cost on either shows in full; the capture's
// ratio is taken on it. `cores_used` is the process's CPU time over the
// wall time of the queued blocks: how many cores the step kept busy.
//
//   runtime_bench [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "loupe/prof/capture.h"
#include "loupe/prof/trace_reader.h"
#include "mlp.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using loupe::samples::TrainState;
using rt::Array;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of every thread of the process, so that CPU time over wall time
// says how many cores a run really kept busy.
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

auto make_step() {
  return rt::jit("train_step", [](TrainState s, Array x, Array y) { return loupe::samples::train_step(s, x, y); },
                 {.arg_names = {"state", "x", "y"}});
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int blocks = quick ? 4 : 12, per_block = quick ? 6 : 8;
  rt::Device dev = rt::default_device();
  auto params = loupe::samples::mlp_init({784, 1024, 1024, 10}, 0);
  TrainState state{params, rt::adamw_init(params)};
  Array x = rt::random::normal(rt::random::key(1), {256, 784});
  Array y = rt::random::randint(rt::random::key(2), {256}, 0, 10);
  rt::synchronize(dev);

  // Compile latency: fresh jit objects compiled ahead of time, so that each
  // one traces, optimises and generates code. The first compile of the
  // process pays for cold caches and is reported apart.
  std::vector<double> compile_ms, trace_ms, optimize_ms, codegen_ms;
  double first_compile_ms = 0;
  for (int i = 0; i < (quick ? 3 : 9); ++i) {
    auto f = make_step();
    double t0 = now_ms();
    f.compile_for(state, x, y);
    double t = now_ms() - t0;
    rt::JitStats s = f.stats();
    if (i == 0) {
      first_compile_ms = t;
      continue;
    }
    compile_ms.push_back(t);
    trace_ms.push_back(double(s.last_trace_ns) / 1e6);
    optimize_ms.push_back(double(s.last_optimize_ns) / 1e6);
    codegen_ms.push_back(double(s.last_codegen_ns) / 1e6);
  }

  auto step = make_step();
  auto run_block = [&](int n, bool jitted) {
    rt::synchronize(dev);
    double t0 = now_ms();
    for (int i = 0; i < n; ++i) {
      auto [next, loss] = jitted ? step(state, x, y) : loupe::samples::train_step(state, x, y);
      state = next;
    }
    state.params[0].block_until_ready();
    rt::synchronize(dev);
    return (now_ms() - t0) / n;
  };
  run_block(3, true);  // compile and warm up

  // Queued back to back, in blocks long enough that one wait at the end
  // weighs little against the steps (a GPU step is well under a
  // millisecond, a CPU one tens of them).
  const double min_block_ms = quick ? 100 : 300, guess_ms = run_block(3, true);
  const int queued = std::clamp(int(min_block_ms / std::max(guess_ms, 1e-3)) + 1, 3, 2000);
  std::vector<double> queued_ms;
  double cpu0 = process_cpu_ms(), wall0 = now_ms();
  for (int b = 0; b < (quick ? 5 : 9); ++b) queued_ms.push_back(run_block(queued, true));
  double cores_used = (process_cpu_ms() - cpu0) / (now_ms() - wall0);

  // Capture on and off, interleaved in blocks in one process so that both
  // see the same machine; each step is waited for and the medians
  // compared. A capture's start and first step, less a waited step, are
  // its start-up (the process's first capture reported on its own); its
  // later steps are the steady state.
  std::string trace = (std::filesystem::temp_directory_path() / "loupe-runtime-bench.db").string();
  std::vector<double> off, on, startup;
  double first_startup = -1;
  auto timed_steps = [&](std::vector<double>& out, int n) {
    for (int i = 0; i < n; ++i) out.push_back(run_block(1, true));
  };
  auto captured_steps = [&](int n) {
    double t0 = now_ms();
    prof::Capture capture({.path = trace});
    run_block(1, true);
    double start_ms = now_ms() - t0;
    if (first_startup < 0) first_startup = start_ms;
    else startup.push_back(start_ms);
    timed_steps(on, n - 1);
    capture.stop();
  };
  for (int b = 0; b < blocks; ++b) {
    // Alternate which comes first, and let the machine settle before each
    // block (closing a capture leaves the OS writing the file back), so
    // that neither mode always follows the other.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (b % 2 == 0) timed_steps(off, per_block);
    else captured_steps(per_block);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (b % 2 == 0) captured_steps(per_block);
    else timed_steps(off, per_block);
  }
  // What a step records (the last block's trace): the overhead also follows
  // from this count and the record API's cost per event (record_bench).
  prof::TraceModel model = prof::load_trace(trace);
  double events_per_step = double(model.total_events()) / per_block;
  std::filesystem::remove(trace);

  std::vector<double> eager;
  run_block(1, false);
  for (int b = 0; b < (quick ? 3 : 5); ++b) eager.push_back(run_block(1, false));

  double waited_ms = median(off);
  std::string blas;  // as a JSON string's contents
  for (char ch : rt::cpu_blas()) {
    if (ch == '"' || ch == '\\') blas += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) blas += ch;
  }
  std::printf(
      "{\"compile_ms\": %.3f, \"first_compile_ms\": %.3f, \"trace_ms\": %.3f, \"optimize_ms\": %.3f, "
      "\"codegen_ms\": %.3f, \"kernels\": %u, \"nodes\": %u, \"step_ms\": %.3f, \"steps_per_block\": %d, "
      "\"cores_used\": %.2f, "
      "\"step_waited_ms\": %.3f, \"capture_on_ms\": %.3f, \"capture_ratio\": %.4f, \"capture_steady_steps\": %zu, "
      "\"capture_startup_ms\": %.3f, \"capture_first_startup_ms\": %.3f, \"events_per_step\": %.1f, "
      "\"eager_step_ms\": %.3f, \"blas\": \"%s\"}\n",
      median(compile_ms), first_compile_ms, median(trace_ms), median(optimize_ms), median(codegen_ms),
      step.stats().last_kernels, step.stats().last_nodes, median(queued_ms), queued, cores_used, waited_ms, median(on),
      median(on) / waited_ms, on.size(), median(startup) - waited_ms, first_startup - waited_ms, events_per_step,
      median(eager), blas.c_str());
  return 0;
}
