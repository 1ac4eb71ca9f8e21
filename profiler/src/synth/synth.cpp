#include "loupe/prof/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "loupe/prof/trace_writer.h"

namespace loupe::prof {

namespace {

constexpr int kDevices = 2;
constexpr int kLayers = 12;
constexpr int64_t kGiB = int64_t(1) << 30;

constexpr std::array<const char*, 12> kForwardKernels = {"sgemm_128x64_nn",     "bias_add_f32",        "gelu_fwd_f32",
                                                         "layer_norm_fwd",      "softmax_fwd_f32",     "dropout_fwd",
                                                         "fused_attention_fwd", "elementwise_add_f32", "sgemm_64x64_nt",
                                                         "reduce_mean_f32",     "embedding_gather",    "cast_f16"};
constexpr std::array<const char*, 10> kBackwardKernels = {
    "sgemm_128x64_tn", "gelu_bwd_f32", "layer_norm_bwd",      "softmax_bwd_f32", "fused_attention_bwd",
    "reduce_sum_f32",  "dropout_bwd",  "elementwise_mul_f32", "sgemm_64x64_nn",  "bias_grad_f32"};

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

// The strings the synthetic program uses, interned once, in a fixed order
// (string ids follow it, so files stay reproducible).
struct SynthNames {
  StringId forward_kernels[kForwardKernels.size()], backward_kernels[kBackwardKernels.size()];
  StringId layers[kLayers];
  StringId step, forward, backward, optimizer, launch, memcpy, sync, adamw, h2d, d2h, allreduce, next, collate, ckpt,
      compile, fn, loss, throughput, epoch;
  StringId signatures[3];

  void intern_all(TraceWriter& w) {
    for (size_t i = 0; i < kForwardKernels.size(); ++i) forward_kernels[i] = w.intern(kForwardKernels[i]);
    for (size_t i = 0; i < kBackwardKernels.size(); ++i) backward_kernels[i] = w.intern(kBackwardKernels[i]);
    for (int i = 0; i < kLayers; ++i) layers[i] = w.intern(fmt::format("layer{}", i));
    step = w.intern("train_step"), forward = w.intern("forward"), backward = w.intern("backward");
    optimizer = w.intern("optimizer"), launch = w.intern("cudaLaunchKernel"), memcpy = w.intern("cudaMemcpyAsync");
    sync = w.intern("cudaStreamSynchronize"), adamw = w.intern("adamw_update");
    h2d = w.intern("Memcpy HtoD (Pinned -> Device)"), d2h = w.intern("Memcpy DtoH (Device -> Pageable)");
    allreduce = w.intern("ncclAllReduce_sum_f32"), next = w.intern("dataloader.next"), collate = w.intern("collate");
    ckpt = w.intern("save_checkpoint"), compile = w.intern("jit compile"), fn = w.intern("train_step");
    loss = w.intern("loss"), throughput = w.intern("samples_per_second"), epoch = w.intern("epoch");
    const StringId file = w.intern("examples/train.cpp"), fn_main = w.intern("int main()"),
                   fn_step = w.intern("train_step(Params&, Batch const&)");
    w.put(CallSiteRow{.id = 1, .file = file, .line = 88, .function = fn_main});  // loss.item()
    w.put(CallSiteRow{.id = 2, .file = file, .line = 61, .function = fn_step});  // activations
    w.put(CallSiteRow{.id = 3, .file = file, .line = 74, .function = fn_main});  // batch upload
    signatures[0] = w.intern("f32[256,784], i32[256]");
    signatures[1] = w.intern("f32[255,784], i32[255]");
    signatures[2] = w.intern("f32[128,784], i32[128]");
  }
};

constexpr uint32_t kLoader = 2;  // the data loader's thread
constexpr int64_t kBatchBytes = int64_t(256) * 784 * 4;

// A data-parallel training loop on two devices, one host thread each, fed
// by a loader thread: written step by step until the event budget is spent.
class SyntheticProgram {
 public:
  SyntheticProgram(TraceWriter& w, const SynthOptions& options) : w_(w), rng_(options.seed), out_(w, options.events) {
    write_header(options);
    names_.intern_all(w);
  }

  SynthResult run() {
    while (!out_.full()) {
      load_batch();
      if (step_ % 500 == 0)
        out_.add(InstantRow{.thread = 0, .time = host_t_[0], .name = names_.epoch, .kind = SpanKind::user});
      for (uint32_t d = 0; d < kDevices; ++d) train_step(d);
      ++step_;
    }
    int64_t end = std::max({host_t_[0], host_t_[1], loader_t_, dev_[0].compute_free, dev_[1].compute_free});
    w_.set_meta("status", "complete");
    w_.set_meta("capture_start_ns", "0");
    w_.set_meta("capture_end_ns", std::to_string(end));
    w_.set_meta("dropped_events", "0");
    w_.set_meta("lost_events", "0");
    w_.close();
    return {out_.emitted(), uint64_t(step_), end};
  }

 private:
  TraceWriter& w_;
  SplitMix64 rng_;
  Emitter out_;
  SynthNames names_;
  DeviceState dev_[kDevices];
  int64_t host_t_[kDevices] = {1'000'000, 1'050'000};
  int64_t loader_t_ = 500'000;
  int64_t step_ = 0;
  uint64_t correlation_ = 1;
  int last_signature_ = 0;
  // The step being written: its device (and host thread) and host time.
  uint32_t d_ = 0;
  int64_t t_ = 0;

  void write_header(const SynthOptions& options) {
    w_.set_meta("status", "recording");
    w_.set_meta("synth_seed", std::to_string(options.seed));
    w_.set_meta("synth_events", std::to_string(options.events));
    for (uint32_t d = 0; d < kDevices; ++d) {
      w_.put(DeviceRow{.id = d,
                       .name = fmt::format("Synthetic GPU {}", d),
                       .kind = DeviceKind::cuda,
                       .memory_capacity = 16 * kGiB,
                       .copy_bandwidth = 24'000'000'000});
      w_.put(StreamRow{.device = d, .stream = 0, .name = "compute"});
      w_.put(StreamRow{.device = d, .stream = 1, .name = "copy HtoD"});
      w_.put(StreamRow{.device = d, .stream = 2, .name = "copy DtoH"});
      w_.put(StreamRow{.device = d, .stream = 3, .name = "aux compute"});
    }
    // Thread 0 drives device 0, thread 1 device 1, thread 2 loads data.
    w_.put(ThreadRow{.id = 0, .process = 4242, .os_tid = 4242, .name = "main", .dropped_events = 0});
    w_.put(ThreadRow{.id = 1, .process = 4242, .os_tid = 4250, .name = "replica 1", .dropped_events = 0});
    w_.put(ThreadRow{.id = kLoader, .process = 4242, .os_tid = 4251, .name = "data loader", .dropped_events = 0});
  }

  // The program's rows, one function a kind. Host spans have no call site;
  // launches, device ops and memory events belong to the step being
  // written (its device and thread, at its host time).
  void span(uint32_t thread, int64_t start, int64_t dur, StringId name, uint32_t depth,
            SpanKind kind = SpanKind::user) {
    out_.add(HostSpanRow{
        .thread = thread, .start = start, .dur = dur, .name = name, .kind = kind, .depth = depth, .callsite = 0});
  }

  // A span of the step's thread that ends now.
  void span_to_now(int64_t start, StringId name, uint32_t depth) { span(d_, start, t_ - start, name, depth); }

  void launch(StringId name, int64_t dur, uint32_t stream, uint64_t corr) {
    out_.add(LaunchRow{
        .thread = d_, .start = t_, .dur = dur, .name = name, .device = d_, .stream = stream, .correlation = corr});
  }

  // A kernel, or a copy of `bytes` in `direction`.
  void device_op(uint32_t stream, int64_t start, int64_t dur, StringId name, uint64_t corr, int64_t bytes = 0,
                 CopyKind direction = CopyKind::none) {
    out_.add(DeviceOpRow{.device = d_,
                         .stream = stream,
                         .start = start,
                         .dur = dur,
                         .kind = direction == CopyKind::none ? DeviceOpKind::kernel : DeviceOpKind::memcpy,
                         .name = name,
                         .bytes = bytes,
                         .copy_kind = direction,
                         .correlation = corr});
  }

  // With the device's levels as they are after the event.
  void memory_event(MemoryEventKind kind, int64_t bytes, uint64_t address) {
    const DeviceState& ds = dev_[d_];
    out_.add(MemoryEventRow{.device = d_,
                            .time = t_,
                            .kind = kind,
                            .bytes = bytes,
                            .address = address,
                            .allocated = ds.allocated,
                            .reserved = ds.reserved,
                            .callsite = 2});
  }

  // The loader prepares the next batch.
  void load_batch() {
    int64_t dur = rng_.uniform(300'000, 900'000);
    span(kLoader, loader_t_, dur, names_.next, 0);
    span(kLoader, loader_t_ + dur / 4, dur / 2, names_.collate, 1);
    loader_t_ += dur + rng_.uniform(50'000, 200'000);
  }

  void train_step(uint32_t d) {
    d_ = d;
    t_ = host_t_[d];
    const int64_t step_start = t_;
    if (d == 0) compile();
    upload_batch();
    forward();
    backward();
    optimizer();
    read_loss();
    if (d == 0) out_.add(CounterRow{.name = names_.loss, .time = t_, .value = 2.5 / (1.0 + double(step_) * 0.01)});
    if (d == 0) out_.add(CounterRow{.name = names_.throughput, .time = t_, .value = 256e9 / double(t_ - step_start)});
    // Host work between steps: logging, and a checkpoint now and then.
    t_ += rng_.uniform(20'000, 80'000);
    if (step_ % 200 == 199) {
      int64_t dur = rng_.uniform(2'000'000, 4'000'000);
      span(d, t_, dur, names_.ckpt, 1);
      t_ += dur;
    }
    span_to_now(step_start, names_.step, 0);
    out_.add(StepRow{.thread = d, .start = step_start, .dur = t_ - step_start, .number = step_});
    host_t_[d] = t_;
  }

  // Compile cache: a miss on the first step and when the batch shape
  // changes (a ragged final batch); otherwise a hit.
  void compile() {
    static const char* shapes[3] = {"f32[256,784]", "f32[255,784]", "f32[128,784]"};
    int signature = (step_ % 97 == 96) ? 1 : (step_ % 389 == 388 ? 2 : 0);
    bool miss = step_ == 0 || signature != last_signature_;
    CompileRow c;
    c.thread = d_;
    c.start = t_;
    c.function = names_.fn;
    c.signature = names_.signatures[signature];
    c.function_object = 0x5a5a;
    c.callsite = 2;
    if (miss) {
      c.kind = CompileKind::miss;
      c.trace_ns = rng_.uniform(800'000, 1'500'000);
      c.optimize_ns = rng_.uniform(2'000'000, 6'000'000);
      c.codegen_ns = rng_.uniform(10'000'000, 40'000'000);
      c.dur = c.trace_ns + c.optimize_ns + c.codegen_ns;
      c.nodes = 412;
      c.kernels = 57;
      c.reason = step_ == 0 ? std::string("first compile")
                            : fmt::format("arg 0 `x`: now {}, before {}", shapes[signature], shapes[last_signature_]);
      c.ir = fmt::format("func @train_step(%x: {}) {{ ... 412 nodes ... }}", shapes[signature]);
      span(d_, t_, c.dur, names_.compile, 1, SpanKind::compile);
    } else {
      c.kind = CompileKind::hit;
      c.dur = rng_.uniform(2'000, 6'000);
    }
    t_ += c.dur;
    out_.add(c);
    last_signature_ = signature;
  }

  // Upload the batch (pinned, asynchronous).
  void upload_batch() {
    DeviceState& ds = dev_[d_];
    uint64_t corr = correlation_++;
    int64_t dur = rng_.uniform(8'000, 15'000);
    launch(names_.memcpy, dur, 1, corr);
    out_.add(TransferRow{.thread = d_,
                         .start = t_,
                         .dur = dur,
                         .device = d_,
                         .direction = CopyKind::host_to_device,
                         .bytes = kBatchBytes,
                         .synchronous = false,
                         .implicit = false,
                         .host_memory = HostMemory::pinned,
                         .callsite = 3,
                         .correlation = corr});
    int64_t copy_start = t_ + dur + rng_.uniform(2'000, 6'000);
    int64_t copy_dur = kBatchBytes / 12;  // ~12 GB/s
    device_op(1, copy_start, copy_dur, names_.h2d, corr, kBatchBytes, CopyKind::host_to_device);
    ds.compute_free = std::max(ds.compute_free, copy_start + copy_dur);
    t_ += dur;
  }

  void run_kernel(StringId name, int64_t min_dur, int64_t max_dur) {
    DeviceState& ds = dev_[d_];
    uint64_t corr = correlation_++;
    int64_t launch_dur = rng_.uniform(3'000, 9'000);
    launch(names_.launch, launch_dur, 0, corr);
    int64_t start = std::max(ds.compute_free, t_ + launch_dur + rng_.uniform(1'500, 4'000));
    int64_t dur = rng_.uniform(min_dur, max_dur);
    uint32_t stream = rng_.chance(0.1) ? 3 : 0;
    device_op(stream, start, dur, name, corr);
    if (stream == 0) ds.compute_free = start + dur;
    t_ += launch_dur + rng_.uniform(500, 2'000);
  }

  void alloc(int64_t bytes) {
    DeviceState& ds = dev_[d_];
    uint64_t addr = ds.next_address;
    ds.next_address += uint64_t(bytes + 511) & ~uint64_t(511);
    if (ds.allocated + bytes > ds.reserved) {
      int64_t grow = std::max<int64_t>(bytes, 2 << 20);
      ds.reserved += grow;
      memory_event(MemoryEventKind::reserve, grow, addr);
    }
    ds.allocated += bytes;
    ds.live.push_back({addr, bytes});
    memory_event(MemoryEventKind::alloc, bytes, addr);
  }

  void free_last() {
    DeviceState& ds = dev_[d_];
    if (ds.live.empty()) return;
    auto [addr, bytes] = ds.live.back();
    ds.live.pop_back();
    ds.allocated -= bytes;
    memory_event(MemoryEventKind::free, bytes, addr);
  }

  // Forward: per layer a span, its kernels and its activations.
  void forward() {
    int64_t fwd_start = t_;
    for (int layer = 0; layer < kLayers && !out_.full(); ++layer) {
      int64_t layer_start = t_;
      int kernels = int(rng_.uniform(3, 5));
      for (int k = 0; k < kernels; ++k) {
        run_kernel(names_.forward_kernels[rng_.next() % kForwardKernels.size()], 10'000, 120'000);
      }
      alloc(int64_t(rng_.uniform(4, 24)) << 20);
      span_to_now(layer_start, names_.layers[layer], 2);
    }
    span_to_now(fwd_start, names_.forward, 1);
  }

  // Backward: kernels, activations freed in reverse, then the gradient
  // all-reduce on the aux stream.
  void backward() {
    DeviceState& ds = dev_[d_];
    int64_t bwd_start = t_;
    for (int layer = kLayers - 1; layer >= 0 && !out_.full(); --layer) {
      int kernels = int(rng_.uniform(4, 7));
      for (int k = 0; k < kernels; ++k) {
        run_kernel(names_.backward_kernels[rng_.next() % kBackwardKernels.size()], 15'000, 200'000);
      }
      free_last();
    }
    uint64_t corr = correlation_++;
    launch(names_.launch, 12'000, 3, corr);
    int64_t start = std::max(ds.compute_free, t_ + 15'000);
    device_op(3, start, rng_.uniform(200'000, 600'000), names_.allreduce, corr);
    t_ += 14'000;
    span_to_now(bwd_start, names_.backward, 1);
  }

  // Optimizer: one fused update per parameter group.
  void optimizer() {
    int64_t opt_start = t_;
    for (int g = 0; g < 4; ++g) run_kernel(names_.adamw, 20'000, 60'000);
    span_to_now(opt_start, names_.optimizer, 1);
  }

  // loss.item(): a synchronous, pageable read-back that waits for the
  // whole step's kernels: the device idles while the host catches up.
  void read_loss() {
    DeviceState& ds = dev_[d_];
    uint64_t corr = correlation_++;
    int64_t copy_start = std::max(ds.compute_free, t_ + 10'000);
    int64_t copy_dur = rng_.uniform(3'000, 6'000);
    int64_t done = copy_start + copy_dur + rng_.uniform(2'000, 5'000);
    launch(names_.memcpy, 9'000, 2, corr);
    device_op(2, copy_start, copy_dur, names_.d2h, corr, 4, CopyKind::device_to_host);
    span(d_, t_ + 9'000, done - (t_ + 9'000), names_.sync, 1, SpanKind::wait);
    out_.add(TransferRow{.thread = d_,
                         .start = t_,
                         .dur = done - t_,
                         .device = d_,
                         .direction = CopyKind::device_to_host,
                         .bytes = 4,
                         .synchronous = true,
                         .implicit = true,
                         .host_memory = HostMemory::pageable,
                         .callsite = 1,
                         .correlation = corr});
    t_ = done;
    ds.compute_free = done;
  }
};

}  // namespace

SynthResult write_synthetic_trace(const std::string& path, const SynthOptions& options) {
  WriterOptions wo;
  wo.producer = "loupe synth";
  wo.origin_wall_ns = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z: fixed, so files are reproducible
  wo.live = false;                                // written in one go: the path gets the trace when it is complete
  TraceWriter w(path, wo);
  return SyntheticProgram(w, options).run();
}

}  // namespace loupe::prof
