// write_synthetic_job: the ranks of a data-parallel run, written one trace
// per rank on every core. The schedule of a step is the same on every rank
// but for the straggler's delay, so each rank's trace is computed from a
// closed form in true time and written on its own (wrong) clock; no rank
// needs another's rows, and memory stays one rank's writer per core.
#include "loupe/prof/job_synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "job/job_folder.h"
#include "loupe/prof/synth.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof {

namespace {

// The shape of a step, in ns. The constraints that keep the answers exact:
// a bucket's compute outlasts an all-reduce's delay plus its transfer, so
// every all-reduce but the last is hidden behind the next bucket, and the
// host launches everything before the device needs it.
constexpr int kForwardKernels = 24;
constexpr int kAttentionKernel = 6;  // the straggler's slow kernel
constexpr int kBuckets = 8;
constexpr int kBucketKernels = 6;
constexpr int kOptimizerKernels = 4;
constexpr int64_t kUs = 1000;
constexpr int64_t kForwardKernelNs = 40 * kUs, kBackwardKernelNs = 50 * kUs, kOptimizerKernelNs = 25 * kUs;
constexpr int64_t kBucketNs = kBucketKernels * kBackwardKernelNs;
constexpr int64_t kTransferNs = 120 * kUs, kDelayNs = 150 * kUs;
constexpr int64_t kLaunchEveryNs = 5 * kUs, kLaunchNs = 4 * kUs, kFirstLaunchNs = 10 * kUs;
constexpr int64_t kLoaderNs = 50 * kUs;
constexpr int64_t kBucketBytes = int64_t(25) << 20;
constexpr int kLaunches = kForwardKernels + kBuckets * (kBucketKernels + 1) + kOptimizerKernels;
// Rows a step writes: a launch and a device op per launch, a collective
// per bucket, five host spans (forward, backward, optimizer, the wait,
// the data loader) and the step.
constexpr uint64_t kRowsPerStep = 2 * kLaunches + kBuckets + 5 + 1;
static_assert(kDelayNs + kTransferNs <= kBucketNs, "an all-reduce must fit inside the next bucket");
constexpr int64_t kWallOrigin = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z

constexpr const char* kForwardNames[] = {"sgemm_128x64_nn",     "bias_add_f32",        "gelu_fwd_f32",
                                         "layer_norm_fwd",      "softmax_fwd_f32",     "dropout_fwd",
                                         "fused_attention_fwd", "elementwise_add_f32", "sgemm_64x64_nt",
                                         "reduce_mean_f32",     "embedding_gather",    "cast_f16"};
constexpr const char* kBackwardNames[] = {"sgemm_128x64_tn", "gelu_bwd_f32",        "layer_norm_bwd",
                                          "softmax_bwd_f32", "fused_attention_bwd", "reduce_sum_f32"};

// The job-wide plan: which steps are late, each rank's clock.
struct Plan {
  int64_t ranks = 0, steps = 0, straggler = 0;
  std::vector<bool> late;            // per step
  std::vector<int64_t> clock_error;  // per rank: its wall clock minus true time
  // Each step's start in true time (the same on every rank).
  std::vector<int64_t> step_start;
};

// A step's device end in true time, after its start `t`.
int64_t step_device_end(int64_t t, bool late) {
  int64_t forward_end = t + kFirstLaunchNs + kLaunchNs + kForwardKernels * kForwardKernelNs + (late ? kDelayNs : 0);
  int64_t last_allreduce_end = forward_end + kBuckets * kBucketNs + kTransferNs;
  return last_allreduce_end + kOptimizerKernels * kOptimizerKernelNs;
}

// The host's step: from its start to the end of its wait for the device.
int64_t step_host_end(int64_t t, bool late) { return step_device_end(t, late) + 5 * kUs; }

Plan make_plan(const JobSynthOptions& o) {
  Plan p;
  p.ranks = o.ranks;
  p.steps = int64_t(std::max<uint64_t>(1, (o.events + kRowsPerStep - 1) / kRowsPerStep));
  SplitMix64 rng(o.seed);
  p.straggler = int64_t(rng.next() % uint64_t(o.ranks));
  for (int64_t s = 0; s < p.steps; ++s) p.late.push_back(s % 5 != 4);  // late in four steps of five
  for (int64_t r = 0; r < o.ranks; ++r) p.clock_error.push_back(rng.uniform(-5'000 * kUs, 5'000 * kUs));
  int64_t t = 0;
  for (int64_t s = 0; s < p.steps; ++s) {
    p.step_start.push_back(t);
    t = step_host_end(t, p.late[size_t(s)]) + kLoaderNs;
  }
  return p;
}

// Writes one rank's trace. Times are written on the rank's own clock: its
// origin is (r + 1) * 100 us before the run in true time, and its wall
// clock is off by its clock error.
class RankWriter {
 public:
  RankWriter(const Plan& plan, int64_t rank, TraceWriter& w) : plan_(plan), rank_(rank), w_(w) {
    origin_ = -(rank + 1) * 100 * kUs;
  }

  uint64_t run() {
    names();
    for (int64_t s = 0; s < plan_.steps; ++s) {
      step(s);
      if (w_.staged() >= (1u << 20)) w_.commit();
    }
    return rows_;
  }

 private:
  int64_t at(int64_t true_time) const { return true_time - origin_; }

  void names() {
    for (const char* n : kForwardNames) forward_.push_back(w_.intern(n));
    for (const char* n : kBackwardNames) backward_.push_back(w_.intern(n));
    adamw_ = w_.intern("adamw_update"), launch_ = w_.intern("cudaLaunchKernel");
    nccl_ = w_.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), allreduce_ = w_.intern("allreduce");
    group_ = w_.intern("0"), sync_ = w_.intern("cudaStreamSynchronize"), loader_ = w_.intern("dataloader.next");
    fwd_ = w_.intern("forward"), bwd_ = w_.intern("backward"), opt_ = w_.intern("optimizer");
  }

  template <typename Row>
  void add(const Row& row) {
    w_.add(row);
    ++rows_;
  }

  // A launch of the kernel `name`, the `index`-th of the step, on `stream`,
  // running on the device at [start, start + dur) in true time.
  void kernel(int64_t step_start, int index, StringId name, uint32_t stream, int64_t start, int64_t dur) {
    int64_t issued = step_start + kFirstLaunchNs + index * kLaunchEveryNs;
    ++correlation_;
    add(LaunchRow{.thread = 0,
                  .start = at(issued),
                  .dur = kLaunchNs,
                  .name = launch_,
                  .device = 0,
                  .stream = stream,
                  .correlation = correlation_});
    add(DeviceOpRow{.device = 0,
                    .stream = stream,
                    .start = at(start),
                    .dur = dur,
                    .kind = DeviceOpKind::kernel,
                    .name = name,
                    .correlation = correlation_});
  }

  void span(StringId name, int64_t start, int64_t end, SpanKind kind) {
    add(HostSpanRow{.thread = 0, .start = at(start), .dur = end - start, .name = name, .kind = kind, .depth = 1});
  }

  void step(int64_t s) {
    const int64_t t = plan_.step_start[size_t(s)];
    const bool late = plan_.late[size_t(s)];
    const int64_t shift = late && rank_ == plan_.straggler ? kDelayNs : 0;
    int index = 0;
    int64_t dev = t + kFirstLaunchNs + kLaunchNs;
    for (int i = 0; i < kForwardKernels; ++i) {
      int64_t dur = kForwardKernelNs + (i == kAttentionKernel ? shift : 0);
      kernel(t, index++, forward_[size_t(i) % forward_.size()], 0, dev, dur);
      dev += dur;
    }
    span(fwd_, t + kFirstLaunchNs, t + kFirstLaunchNs + kForwardKernels * kLaunchEveryNs, SpanKind::user);
    int64_t backward_launches = t + kFirstLaunchNs + index * kLaunchEveryNs;
    int64_t last_end = 0;
    for (int b = 0; b < kBuckets; ++b) {
      for (int k = 0; k < kBucketKernels; ++k) {
        kernel(t, index++, backward_[size_t(k)], 0, dev, kBackwardKernelNs);
        dev += kBackwardKernelNs;
      }
      // Every rank reaches the all-reduce when its bucket ends; it ends
      // when the latest rank's bucket ends, plus the transfer.
      int64_t latest = dev - shift + (late ? kDelayNs : 0);
      last_end = latest + kTransferNs;
      int64_t issued = t + kFirstLaunchNs + index * kLaunchEveryNs;
      kernel(t, index++, nccl_, 1, dev, last_end - dev);
      add(CollectiveRow{.process_group = group_,
                        .start = at(dev),
                        .dur = last_end - dev,
                        .name = allreduce_,
                        .in_bytes = kBucketBytes,
                        .out_bytes = kBucketBytes,
                        .group_size = uint32_t(plan_.ranks),
                        .issued = at(issued),
                        .on_device = true,
                        .device = 0,
                        .stream = 1});
    }
    span(bwd_, backward_launches, t + kFirstLaunchNs + index * kLaunchEveryNs, SpanKind::user);
    int64_t optimizer_launches = t + kFirstLaunchNs + index * kLaunchEveryNs;
    dev = last_end;  // the optimizer waits for the last all-reduce's gradients
    for (int k = 0; k < kOptimizerKernels; ++k) {
      kernel(t, index++, adamw_, 0, dev, kOptimizerKernelNs);
      dev += kOptimizerKernelNs;
    }
    int64_t launched = t + kFirstLaunchNs + index * kLaunchEveryNs;
    span(opt_, optimizer_launches, launched, SpanKind::user);
    int64_t host_end = step_host_end(t, late);
    span(sync_, launched, host_end, SpanKind::wait);
    add(StepRow{.thread = 0, .start = at(t), .dur = host_end - t, .number = s});
    span(loader_, host_end, host_end + kLoaderNs, SpanKind::user);
  }

  const Plan& plan_;
  int64_t rank_;
  TraceWriter& w_;
  int64_t origin_ = 0;
  uint64_t rows_ = 0, correlation_ = 0;
  std::vector<StringId> forward_, backward_;
  StringId adamw_ = 0, launch_ = 0, nccl_ = 0, allreduce_ = 0, group_ = 0, sync_ = 0, loader_ = 0, fwd_ = 0, bwd_ = 0,
           opt_ = 0;
};

std::string host_of(int64_t rank) { return fmt::format("node{}", rank / 8); }

uint64_t write_rank(const Plan& plan, int64_t rank, const std::string& path) {
  WriterOptions wo;
  wo.producer = "loupe synth";
  wo.live = false;
  int64_t origin = -(rank + 1) * 100 * kUs;
  wo.origin_wall_ns = kWallOrigin + origin + plan.clock_error[size_t(rank)];
  TraceWriter w(path, wo);
  w.set_meta("rank", std::to_string(rank));
  w.set_meta("world_size", std::to_string(plan.ranks));
  w.set_meta("distributed_backend", "nccl");
  w.set_meta("hostname", host_of(rank));
  w.put(DeviceRow{.id = 0,
                  .name = fmt::format("Synthetic GPU {}", rank % 8),
                  .kind = DeviceKind::cuda,
                  .memory_capacity = int64_t(80) << 30,
                  .copy_bandwidth = 24'000'000'000});
  w.put(StreamRow{.device = 0, .stream = 0, .name = "compute"});
  w.put(StreamRow{.device = 0, .stream = 1, .name = "nccl"});
  w.put(ThreadRow{.id = 0, .process = 1000 + rank, .os_tid = 1000 + rank, .name = "main", .dropped_events = 0});
  uint64_t rows = RankWriter(plan, rank, w).run();
  w.set_meta("status", "complete");
  w.close();
  return rows;
}

// Writes every rank, one per core; the first error is rethrown.
std::vector<uint64_t> write_ranks(const Plan& plan, const Job& job, JobWrite& out) {
  std::vector<uint64_t> rows(size_t(plan.ranks));
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::exception_ptr error;
  auto worker = [&] {
    for (int64_t r; (r = next.fetch_add(1)) < plan.ranks;) {
      try {
        rows[size_t(r)] = write_rank(plan, r, out.add_file(job.ranks[size_t(r)].trace));
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
        next = plan.ranks;
      }
    }
  };
  unsigned n = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, unsigned(plan.ranks));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < n; ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return rows;
}

}  // namespace

PlantedJob write_synthetic_job(const std::string& dir, const JobSynthOptions& options) {
  if (options.ranks < 1 || options.ranks > kMaxJobRanks) {
    throw JobError(fmt::format("a job has 1 to {} ranks, not {}", kMaxJobRanks, options.ranks));
  }
  JobWrite out(dir);
  Plan plan = make_plan(options);
  PlantedJob p;
  p.job.dir = dir;
  p.job.world_size = options.ranks;
  p.job.backend = "nccl";
  for (int64_t r = 0; r < options.ranks; ++r) {
    p.job.ranks.push_back({.rank = r, .trace = out.trace_name(r), .source = "loupe synth", .host = host_of(r)});
  }
  std::vector<uint64_t> rows = write_ranks(plan, p.job, out);
  for (size_t r = 0; r < rows.size(); ++r) p.job.ranks[r].events = rows[r];
  out.commit(p.job);
  p.steps = plan.steps;
  p.collectives_per_step = kBuckets;
  p.bucket_bytes = kBucketBytes;
  p.straggler = plan.straggler;
  for (int64_t s = 0; s < plan.steps; ++s) {
    if (plan.late[size_t(s)]) p.late_steps.push_back(s);
  }
  p.delay_ns = kDelayNs;
  p.transfer_ns = kTransferNs;
  p.compute_ns = kForwardKernels * kForwardKernelNs + kBuckets * kBucketNs + kOptimizerKernels * kOptimizerKernelNs;
  for (int64_t e : plan.clock_error) p.clock_offset_ns.push_back(e - plan.clock_error[0]);
  p.events_per_rank = rows.empty() ? 0 : rows[0];
  return p;
}

}  // namespace loupe::prof
