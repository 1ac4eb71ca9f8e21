#include "loupe/prof/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "loupe/prof/trace_writer.h"

namespace loupe::prof {

namespace {

// splitmix64: a small, portable generator, so a seed gives the same trace
// with any standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  int64_t uniform(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t state_;
};

constexpr int kDevices = 2;
constexpr int kLayers = 12;
constexpr int64_t kGiB = int64_t(1) << 30;

constexpr std::array<const char*, 12> kForwardKernels = {
    "sgemm_128x64_nn", "bias_add_f32", "gelu_fwd_f32", "layer_norm_fwd", "softmax_fwd_f32", "dropout_fwd",
    "fused_attention_fwd", "elementwise_add_f32", "sgemm_64x64_nt", "reduce_mean_f32", "embedding_gather", "cast_f16"};
constexpr std::array<const char*, 10> kBackwardKernels = {
    "sgemm_128x64_tn", "gelu_bwd_f32", "layer_norm_bwd", "softmax_bwd_f32", "fused_attention_bwd",
    "reduce_sum_f32",  "dropout_bwd",  "elementwise_mul_f32", "sgemm_64x64_nn", "bias_grad_f32"};

// Emits rows until the budget is spent; every add is counted.
class Emitter {
 public:
  Emitter(TraceWriter& w, uint64_t budget) : w_(w), budget_(budget) {}
  bool full() const { return emitted_ >= budget_; }
  uint64_t emitted() const { return emitted_; }
  template <typename Row>
  void add(const Row& row) {
    if (full()) return;
    w_.add(row);
    ++emitted_;
    if (w_.staged() >= (1u << 20)) w_.commit();
  }

 private:
  TraceWriter& w_;
  uint64_t budget_;
  uint64_t emitted_ = 0;
};

struct DeviceState {
  int64_t compute_free = 0;  // when stream 0 is next free
  int64_t allocated = 0, reserved = 0;
  uint64_t next_address = 0x7f0000000000ull;
  std::vector<std::pair<uint64_t, int64_t>> live;  // activations: address, bytes
};

}  // namespace

SynthResult write_synthetic_trace(const std::string& path, const SynthOptions& options) {
  WriterOptions wo;
  wo.producer = "loupe synth";
  wo.origin_wall_ns = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z: fixed, so files are reproducible
  wo.live = false;  // written in one go: the path gets the trace when it is complete
  TraceWriter w(path, wo);
  Rng rng(options.seed);
  Emitter out(w, options.events);

  w.set_meta("status", "recording");
  w.set_meta("synth_seed", std::to_string(options.seed));
  w.set_meta("synth_events", std::to_string(options.events));
  for (uint32_t d = 0; d < kDevices; ++d) {
    w.put(DeviceRow{d, fmt::format("Synthetic GPU {}", d), DeviceKind::cuda, 16 * kGiB, 24'000'000'000});
    w.put(StreamRow{d, 0, "compute"});
    w.put(StreamRow{d, 1, "copy HtoD"});
    w.put(StreamRow{d, 2, "copy DtoH"});
    w.put(StreamRow{d, 3, "aux compute"});
  }
  // Thread 0 drives device 0, thread 1 device 1, thread 2 loads data.
  w.put(ThreadRow{0, 4242, 4242, "main", 0});
  w.put(ThreadRow{1, 4242, 4250, "replica 1", 0});
  w.put(ThreadRow{2, 4242, 4251, "data loader", 0});
  const uint32_t kLoader = 2;

  StringId fwd_names[kForwardKernels.size()], bwd_names[kBackwardKernels.size()];
  for (size_t i = 0; i < kForwardKernels.size(); ++i) fwd_names[i] = w.intern(kForwardKernels[i]);
  for (size_t i = 0; i < kBackwardKernels.size(); ++i) bwd_names[i] = w.intern(kBackwardKernels[i]);
  StringId layer_names[kLayers];
  for (int i = 0; i < kLayers; ++i) layer_names[i] = w.intern(fmt::format("layer{}", i));
  const StringId s_step = w.intern("train_step"), s_forward = w.intern("forward"),
                 s_backward = w.intern("backward"), s_optimizer = w.intern("optimizer"),
                 s_launch = w.intern("cudaLaunchKernel"), s_memcpy = w.intern("cudaMemcpyAsync"),
                 s_sync = w.intern("cudaStreamSynchronize"), s_adamw = w.intern("adamw_update"),
                 s_h2d = w.intern("Memcpy HtoD (Pinned -> Device)"), s_d2h = w.intern("Memcpy DtoH (Device -> Pageable)"),
                 s_allreduce = w.intern("ncclAllReduce_sum_f32"), s_next = w.intern("dataloader.next"),
                 s_collate = w.intern("collate"), s_ckpt = w.intern("save_checkpoint"),
                 s_compile = w.intern("jit compile"), s_fn = w.intern("train_step"),
                 s_loss = w.intern("loss"), s_throughput = w.intern("samples_per_second"),
                 s_epoch = w.intern("epoch");
  const StringId s_file = w.intern("examples/train.cpp"), s_fn_main = w.intern("int main()"),
                 s_fn_step = w.intern("train_step(Params&, Batch const&)");
  w.put(CallSiteRow{1, s_file, 88, s_fn_main});    // loss.item()
  w.put(CallSiteRow{2, s_file, 61, s_fn_step});    // activations
  w.put(CallSiteRow{3, s_file, 74, s_fn_main});    // batch upload
  const StringId sigs[3] = {w.intern("f32[256,784], i32[256]"), w.intern("f32[255,784], i32[255]"),
                            w.intern("f32[128,784], i32[128]")};

  DeviceState dev[kDevices];
  int64_t host_t[kDevices] = {1'000'000, 1'050'000};
  int64_t loader_t = 500'000;
  int64_t step = 0;
  const int64_t batch_bytes = 256 * 784 * 4;
  uint64_t correlation = 1;
  int last_signature = 0;

  while (!out.full()) {
    // The loader prepares the next batch.
    {
      int64_t dur = rng.uniform(300'000, 900'000);
      out.add(HostSpanRow{kLoader, loader_t, dur, s_next, SpanKind::user, 0, 0});
      out.add(HostSpanRow{kLoader, loader_t + dur / 4, dur / 2, s_collate, SpanKind::user, 1, 0});
      loader_t += dur + rng.uniform(50'000, 200'000);
    }
    if (step % 500 == 0) out.add(InstantRow{0, host_t[0], s_epoch, SpanKind::user});

    for (uint32_t d = 0; d < kDevices; ++d) {
      DeviceState& ds = dev[d];
      int64_t t = host_t[d];
      const int64_t step_start = t;

      // Compile cache: a miss on the first step and when the batch shape
      // changes (a ragged final batch); otherwise a hit.
      int signature = (step % 97 == 96) ? 1 : (step % 389 == 388 ? 2 : 0);
      bool miss = step == 0 || signature != last_signature;
      if (d == 0) {
        CompileRow c;
        c.thread = d;
        c.start = t;
        c.function = s_fn;
        c.signature = sigs[signature];
        c.function_object = 0x5a5a;
        c.callsite = 2;
        if (miss) {
          c.kind = CompileKind::miss;
          c.trace_ns = rng.uniform(800'000, 1'500'000);
          c.optimize_ns = rng.uniform(2'000'000, 6'000'000);
          c.codegen_ns = rng.uniform(10'000'000, 40'000'000);
          c.dur = c.trace_ns + c.optimize_ns + c.codegen_ns;
          c.nodes = 412;
          c.kernels = 57;
          static const char* shapes[3] = {"f32[256,784]", "f32[255,784]", "f32[128,784]"};
          c.reason = step == 0 ? std::string("first compile")
                               : fmt::format("arg 0 `x`: now {}, before {}", shapes[signature], shapes[last_signature]);
          c.ir = fmt::format("func @train_step(%x: {}) {{ ... 412 nodes ... }}", shapes[signature]);
          out.add(HostSpanRow{d, t, c.dur, s_compile, SpanKind::compile, 1, 0});
          t += c.dur;
        } else {
          c.kind = CompileKind::hit;
          c.dur = rng.uniform(2'000, 6'000);
          t += c.dur;
        }
        out.add(std::move(c));
        last_signature = signature;
      }

      // Upload the batch (pinned, asynchronous).
      {
        uint64_t corr = correlation++;
        int64_t dur = rng.uniform(8'000, 15'000);
        out.add(LaunchRow{d, t, dur, s_memcpy, d, 1, corr});
        out.add(TransferRow{d, t, dur, d, CopyKind::host_to_device, batch_bytes, false, false, HostMemory::pinned, 3,
                            corr});
        int64_t copy_start = t + dur + rng.uniform(2'000, 6'000);
        int64_t copy_dur = batch_bytes / 12;  // ~12 GB/s
        out.add(DeviceOpRow{d, 1, copy_start, copy_dur, DeviceOpKind::memcpy, s_h2d, batch_bytes,
                            CopyKind::host_to_device, corr});
        ds.compute_free = std::max(ds.compute_free, copy_start + copy_dur);
        t += dur;
      }

      auto run_kernel = [&](StringId name, int64_t min_dur, int64_t max_dur) {
        uint64_t corr = correlation++;
        int64_t launch_dur = rng.uniform(3'000, 9'000);
        out.add(LaunchRow{d, t, launch_dur, s_launch, d, 0, corr});
        int64_t start = std::max(ds.compute_free, t + launch_dur + rng.uniform(1'500, 4'000));
        int64_t dur = rng.uniform(min_dur, max_dur);
        uint32_t stream = rng.chance(0.1) ? 3 : 0;
        out.add(DeviceOpRow{d, stream, start, dur, DeviceOpKind::kernel, name, 0, CopyKind::none, corr});
        if (stream == 0) ds.compute_free = start + dur;
        t += launch_dur + rng.uniform(500, 2'000);
      };
      auto alloc = [&](int64_t bytes) {
        uint64_t addr = ds.next_address;
        ds.next_address += uint64_t(bytes + 511) & ~uint64_t(511);
        if (ds.allocated + bytes > ds.reserved) {
          int64_t grow = std::max<int64_t>(bytes, 2 << 20);
          ds.reserved += grow;
          out.add(MemoryEventRow{d, t, MemoryEventKind::reserve, grow, addr, ds.allocated, ds.reserved, 2});
        }
        ds.allocated += bytes;
        ds.live.push_back({addr, bytes});
        out.add(MemoryEventRow{d, t, MemoryEventKind::alloc, bytes, addr, ds.allocated, ds.reserved, 2});
      };
      auto free_last = [&] {
        if (ds.live.empty()) return;
        auto [addr, bytes] = ds.live.back();
        ds.live.pop_back();
        ds.allocated -= bytes;
        out.add(MemoryEventRow{d, t, MemoryEventKind::free, bytes, addr, ds.allocated, ds.reserved, 2});
      };

      // Forward: per layer a span, its kernels and its activations.
      int64_t fwd_start = t;
      for (int layer = 0; layer < kLayers && !out.full(); ++layer) {
        int64_t layer_start = t;
        int kernels = int(rng.uniform(3, 5));
        for (int k = 0; k < kernels; ++k) {
          run_kernel(fwd_names[rng.next() % kForwardKernels.size()], 10'000, 120'000);
        }
        alloc(int64_t(rng.uniform(4, 24)) << 20);
        out.add(HostSpanRow{d, layer_start, t - layer_start, layer_names[layer], SpanKind::user, 2, 0});
      }
      out.add(HostSpanRow{d, fwd_start, t - fwd_start, s_forward, SpanKind::user, 1, 0});

      // Backward: kernels, activations freed in reverse.
      int64_t bwd_start = t;
      for (int layer = kLayers - 1; layer >= 0 && !out.full(); --layer) {
        int kernels = int(rng.uniform(4, 7));
        for (int k = 0; k < kernels; ++k) {
          run_kernel(bwd_names[rng.next() % kBackwardKernels.size()], 15'000, 200'000);
        }
        free_last();
      }
      // Gradient all-reduce on the aux stream.
      {
        uint64_t corr = correlation++;
        out.add(LaunchRow{d, t, 12'000, s_launch, d, 3, corr});
        int64_t start = std::max(ds.compute_free, t + 15'000);
        out.add(DeviceOpRow{d, 3, start, rng.uniform(200'000, 600'000), DeviceOpKind::kernel, s_allreduce, 0,
                            CopyKind::none, corr});
        t += 14'000;
      }
      out.add(HostSpanRow{d, bwd_start, t - bwd_start, s_backward, SpanKind::user, 1, 0});

      // Optimizer: one fused update per parameter group.
      int64_t opt_start = t;
      for (int g = 0; g < 4; ++g) run_kernel(s_adamw, 20'000, 60'000);
      out.add(HostSpanRow{d, opt_start, t - opt_start, s_optimizer, SpanKind::user, 1, 0});

      // loss.item(): a synchronous, pageable read-back that waits for the
      // whole step's kernels: the device idles while the host catches up.
      {
        uint64_t corr = correlation++;
        int64_t copy_start = std::max(ds.compute_free, t + 10'000);
        int64_t copy_dur = rng.uniform(3'000, 6'000);
        int64_t done = copy_start + copy_dur + rng.uniform(2'000, 5'000);
        out.add(LaunchRow{d, t, 9'000, s_memcpy, d, 2, corr});
        out.add(DeviceOpRow{d, 2, copy_start, copy_dur, DeviceOpKind::memcpy, s_d2h, 4, CopyKind::device_to_host,
                            corr});
        out.add(HostSpanRow{d, t + 9'000, done - (t + 9'000), s_sync, SpanKind::wait, 1, 0});
        out.add(TransferRow{d, t, done - t, d, CopyKind::device_to_host, 4, true, true, HostMemory::pageable, 1,
                            corr});
        t = done;
        ds.compute_free = done;
      }
      if (d == 0) out.add(CounterRow{s_loss, t, 2.5 / (1.0 + double(step) * 0.01)});
      if (d == 0) out.add(CounterRow{s_throughput, t, 256e9 / double(t - step_start)});
      // Host work between steps: logging, and a checkpoint now and then.
      t += rng.uniform(20'000, 80'000);
      if (step % 200 == 199) {
        int64_t dur = rng.uniform(2'000'000, 4'000'000);
        out.add(HostSpanRow{d, t, dur, s_ckpt, SpanKind::user, 1, 0});
        t += dur;
      }
      out.add(HostSpanRow{d, step_start, t - step_start, s_step, SpanKind::user, 0, 0});
      out.add(StepRow{d, step_start, t - step_start, step});
      host_t[d] = t;
    }
    ++step;
  }

  int64_t end = std::max({host_t[0], host_t[1], loader_t, dev[0].compute_free, dev[1].compute_free});
  w.set_meta("status", "complete");
  w.set_meta("capture_start_ns", "0");
  w.set_meta("capture_end_ns", std::to_string(end));
  w.set_meta("dropped_events", "0");
  w.set_meta("lost_events", "0");
  w.close();
  return {out.emitted(), uint64_t(step), end};
}

}  // namespace loupe::prof
