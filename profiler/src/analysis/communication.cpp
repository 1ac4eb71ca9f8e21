// communication: collective kernels (NCCL, RCCL) are communication, not
// compute. What costs a step is the collective time no compute kernel
// overlaps (exposed communication), as HTA's comm/comp overlap measures it:
// time the step would lose if the collectives were perfectly hidden. How to
// hide it depends on what the exposed collectives do (collective_op.h) and
// where they run: a collective on a stream that also runs compute cannot
// overlap that compute.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>

#include "analysis/collective_op.h"
#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// Below this a collective is bound by NCCL's fixed cost per call (its
// launch and the ranks' handshake, some microseconds), not by the bytes it
// moves: a 25 MiB gradient bucket takes longer than this on any link.
constexpr int64_t kShortCollectiveNs = 50'000;
// Short collectives of one kind per step from which that fixed cost, paid
// one call after another, is worth removing.
constexpr double kManyCollectivesPerStep = 32;

// Collective kernels of one name or one operation.
struct Runs {
  std::vector<Interval> runs;
  std::vector<int64_t> durations;
  size_t in_backward = 0;               // launched by the autograd engine
  int64_t time_ns = 0, exposed_ns = 0;  // of the union of the runs, as the finding's totals

  void add(int64_t start, int64_t end, bool backward) {
    runs.push_back({start, end});
    durations.push_back(end - start);
    in_backward += backward;
  }
  void finish(const IntervalSet& compute) {
    IntervalSet u(runs);
    time_ns = u.length();
    exposed_ns = IntervalSet::subtract(u, compute).length();
  }
};

// A device's collectives: per kernel name, per collective operation, and
// those on streams that also run compute.
struct Collectives {
  std::map<std::string, Runs> by_name;
  std::array<Runs, kCollectiveOps> by_op;
  std::vector<uint32_t> shared_streams;  // streams that run collectives and compute
  int64_t shared_exposed_ns = 0;         // exposed time of the collectives on them
};

Collectives collectives_of(const Context& ctx, const DeviceActivity& d) {
  Collectives c;
  std::vector<Interval> shared;
  for (const DeviceOps* s : d.streams) {
    bool with_compute = false;
    std::vector<Interval> on_stream;
    for (size_t i = 0; i < s->size(); ++i) {
      if (s->kind[i] != DeviceOpKind::kernel) continue;
      const std::string& name = ctx.model.str(s->name[i]);
      if (!is_collective_kernel(name)) {
        with_compute = true;
        continue;
      }
      const CollectiveLaunch launch = collective_launch_of(ctx, *s, i);
      c.by_name[name].add(s->start[i], s->end(i), launch.in_backward);
      c.by_op[size_t(launch.op)].add(s->start[i], s->end(i), launch.in_backward);
      on_stream.push_back({s->start[i], s->end(i)});
    }
    if (with_compute && !on_stream.empty()) {
      c.shared_streams.push_back(s->stream);
      shared.insert(shared.end(), on_stream.begin(), on_stream.end());
    }
  }
  for (auto& [name, n] : c.by_name) n.finish(d.compute);
  for (Runs& o : c.by_op) o.finish(d.compute);
  c.shared_exposed_ns = IntervalSet::subtract(IntervalSet(std::move(shared)), d.compute).length();
  return c;
}

// Exposed communication per step, in each step's device window (the
// collectives a step launched run after it ends on the host).
std::vector<int64_t> exposed_per_step(const StepStats& steps, const IntervalSet& exposed) {
  std::map<int64_t, int64_t> by_number;  // steps on several threads count once
  for (const StepStats::Step& s : steps.steps) {
    int64_t& e = by_number[s.number];
    e = std::max(e, exposed.covered(s.device_start, s.device_end));
  }
  std::vector<int64_t> out;
  out.reserve(by_number.size());
  for (const auto& [number, e] : by_number) out.push_back(e);
  return out;
}

std::string kernels(size_t n) { return fmt::format("{} kernel{}", format_count(n), n == 1 ? "" : "s"); }

std::string per_step_text(const Context& ctx, size_t count) {
  return ctx.distinct_steps == 0 ? "" : fmt::format(" ({:.2f} per step)", ctx.per_step(double(count)));
}

// How to hide all-reduces: where the autograd engine launched them they
// reduce gradients, and DDP already starts them during the backward pass.
std::string all_reduce_advice(const Context& ctx, const Runs& o) {
  const size_t n = o.durations.size();
  const double per_step = ctx.per_step(double(n));
  const int64_t median = quantile(o.durations, 0.5);
  const std::string in_backward = fmt::format("{} of {}", format_count(o.in_backward), format_count(n));
  if (ctx.distinct_steps > 0 && per_step >= kManyCollectivesPerStep && median < kShortCollectiveNs) {
    return fmt::format(
        "{:.0f} all-reduces a step, median {} each, {} launched in the backward pass: each pays NCCL's fixed cost "
        "per call, one after another; bucket the gradients into fewer, larger all-reduces (DDP's gradient buckets, "
        "25 MiB by default)",
        per_step, format_duration(median), in_backward);
  }
  if (2 * o.in_backward >= n) {
    return fmt::format(
        "{} launched in the backward pass, as DDP does, yet they outlast its compute: a smaller bucket_cap_mb "
        "starts the first one sooner, and fewer bytes (DDP's bf16 compression hook) end each one sooner",
        in_backward);
  }
  return fmt::format(
      "only {} launched in the backward pass: if they reduce gradients after backward() returns, start them during "
      "it (DDP's gradient buckets); if the next op needs their result at once (tensor parallelism), only "
      "independent work can hide them",
      in_backward);
}

// How to hide the collectives of one operation behind compute.
std::string advice_for(const Context& ctx, CollectiveOp op, const Runs& o) {
  switch (op) {
    case CollectiveOp::all_reduce: return all_reduce_advice(ctx, o);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
      return "with sharded parameters (FSDP, ZeRO-3), prefetch: start the next layer's all-gather while this one "
             "computes (FSDP's forward_prefetch and backward_prefetch), and let each reduce-scatter run during the "
             "backward pass";
    case CollectiveOp::all_to_all:
    case CollectiveOp::send_recv:
      return "overlap the exchange with the compute of another batch or micro-batch: distribute the next batch's "
             "inputs while this one trains (TorchRec's TrainPipelineSparseDist), split an expert dispatch into "
             "chunks, or give a pipeline more micro-batches";
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::unnamed: return "issue the collectives earlier, so that independent compute runs while they do";
  }
  return "";
}

// What to do about collectives that mostly run with no compute beside them.
std::string overlap_advice(const Context& ctx, const Collectives& c, int64_t exposed) {
  if (c.shared_exposed_ns > 0 && 2 * c.shared_exposed_ns >= exposed) {
    return fmt::format(
        "most exposed collective time runs on streams that also run compute (stream {}): a stream runs one "
        "operation at a time, so its compute waits for them; issue the collectives on a stream of their own, ahead "
        "of where their results are needed",
        fmt::join(c.shared_streams, ", "));
  }
  size_t top = 0;
  for (size_t k = 1; k < kCollectiveOps; ++k) {
    if (c.by_op[k].exposed_ns > c.by_op[top].exposed_ns) top = k;
  }
  const CollectiveOp op = CollectiveOp(top);
  return fmt::format(
      "most collective time runs with no compute beside it, most of the exposed time in {} ({}): {}; if the "
      "collectives themselves are slow, compare the ranks: one that arrives late makes every other wait inside the "
      "collective",
      name_of(op), format_duration(c.by_op[top].exposed_ns), advice_for(ctx, op, c.by_op[top]));
}

void add_collectives(const Context& ctx, const Collectives& c, Finding& f) {
  std::vector<size_t> ops;
  for (size_t k = 0; k < kCollectiveOps; ++k) {
    if (!c.by_op[k].durations.empty()) ops.push_back(k);
  }
  std::sort(ops.begin(), ops.end(), [&](size_t a, size_t b) { return c.by_op[a].exposed_ns > c.by_op[b].exposed_ns; });
  for (size_t k : ops) {
    const Runs& o = c.by_op[k];
    f.evidence.push_back({"operation", fmt::format("{}: {}{}, median {}, {}, {} exposed", name_of(CollectiveOp(k)),
                                                   kernels(o.durations.size()), per_step_text(ctx, o.durations.size()),
                                                   format_duration(quantile(o.durations, 0.5)),
                                                   format_duration(o.time_ns), format_duration(o.exposed_ns))});
  }
  if (!c.shared_streams.empty()) {
    f.evidence.push_back(
        {"on compute streams", fmt::format("{} exposed, on stream {}", format_duration(c.shared_exposed_ns),
                                           fmt::join(c.shared_streams, ", "))});
  }
  std::vector<const std::pair<const std::string, Runs>*> costly;
  for (const auto& named : c.by_name) costly.push_back(&named);
  std::sort(costly.begin(), costly.end(),
            [](const auto* a, const auto* b) { return a->second.exposed_ns > b->second.exposed_ns; });
  for (size_t i = 0; i < costly.size() && i < 5; ++i) {
    const auto& [name, n] = *costly[i];
    f.evidence.push_back({"collective", fmt::format("{}: {}, {}, {} exposed", name, kernels(n.durations.size()),
                                                    format_duration(n.time_ns), format_duration(n.exposed_ns))});
  }
}

void add_finding(const Context& ctx, const StepStats& steps, const DeviceActivity& d, std::vector<Finding>& out) {
  IntervalSet exposed = IntervalSet::subtract(d.collectives, d.compute);
  int64_t total = d.collectives.length(), hidden = total - exposed.length();
  double window = double(std::max<int64_t>(ctx.window(), 1));
  Finding f;
  f.rule = "communication";
  f.devices = {d.device};
  f.impact_ns = exposed.length();  // inside the device's window, so within the active window
  f.title = fmt::format(
      "{}: {} of collective communication not overlapped by compute ({} of the window); {} of "
      "collective time overlaps compute",
      device_label(ctx, d.device), format_duration(exposed.length()), format_percent(double(exposed.length()) / window),
      format_percent(double(hidden) / double(std::max<int64_t>(total, 1))));
  f.evidence.push_back({"collective time", format_duration(total)});
  f.evidence.push_back({"overlapped by compute", format_duration(hidden)});
  f.evidence.push_back({"exposed", format_duration(exposed.length())});
  if (std::vector<int64_t> per_step = exposed_per_step(steps, exposed); !per_step.empty()) {
    auto [lo, hi] = std::minmax_element(per_step.begin(), per_step.end());
    f.evidence.push_back({"exposed per step", fmt::format("median {} over {} steps (from {} to {})",
                                                          format_duration(quantile(per_step, 0.5)), per_step.size(),
                                                          format_duration(*lo), format_duration(*hi))});
  }
  const Collectives c = collectives_of(ctx, d);
  add_collectives(ctx, c, f);
  for (const Interval& p : exposed.intervals()) {
    if (f.ranges.size() == 20) break;
    f.ranges.push_back({p.start, p.end});
  }
  f.suggestion = hidden * 2 < total ? overlap_advice(ctx, c, exposed.length())
                                    : "most collective time is hidden behind compute; what remains exposed is the tail "
                                      "of each step's communication";
  grade_by_share(ctx, ctx.options.communication_warning_fraction, f);
  out.push_back(std::move(f));
}

}  // namespace

void rule_communication(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  for (const DeviceActivity& d : ctx.devices) {
    if (!d.collectives.empty()) add_finding(ctx, report.steps, d, out);
  }
}

}  // namespace loupe::prof::analysis
