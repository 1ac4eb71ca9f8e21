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
#include <cctype>
#include <map>
#include <string_view>

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

// Where in a step a collective was launched, as a phrase that follows
// "launched": in the outermost range the program marked around its launch
// ("in `## forward ##`"), in the backward pass when the autograd engine
// launched it, outside any marked range, or with no launch in the trace.
std::string phase_of(const Context& ctx, const CollectiveLaunch& l) {
  if (!l.launched) return "with no recorded launch";
  if (l.in_backward) return "in the backward pass";
  if (l.range) return fmt::format("in `{}`", ctx.model.str(*l.range));
  return "outside any marked range";
}

// A device's collectives: per kernel name, per collective operation, per
// phase of the step and per operation and phase, and those on streams that
// also run compute.
struct Collectives {
  std::map<std::string, Runs> by_name;
  std::array<Runs, kCollectiveOps> by_op;
  std::map<std::string, Runs> by_phase;
  std::array<std::map<std::string, Runs>, kCollectiveOps> by_op_phase;
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
      const std::string phase = phase_of(ctx, launch);
      for (Runs* r : {&c.by_name[name], &c.by_op[size_t(launch.op)], &c.by_phase[phase],
                      &c.by_op_phase[size_t(launch.op)][phase]}) {
        r->add(s->start[i], s->end(i), launch.in_backward);
      }
      on_stream.push_back({s->start[i], s->end(i)});
    }
    if (with_compute && !on_stream.empty()) {
      c.shared_streams.push_back(s->stream);
      shared.insert(shared.end(), on_stream.begin(), on_stream.end());
    }
  }
  for (auto& [name, n] : c.by_name) n.finish(d.compute);
  for (Runs& o : c.by_op) o.finish(d.compute);
  for (auto& [phase, n] : c.by_phase) n.finish(d.compute);
  for (auto& phases : c.by_op_phase) {
    for (auto& [phase, n] : phases) n.finish(d.compute);
  }
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

// The pipelines a trace shows by the ranges their code records, so that
// advice never recommends what the program already does: TorchRec's
// input-distribution pipelines ("## sparse_data_dist ##",
// "## wait_sparse_data_dist ##", "## sdd_preprocess_splits ##"), FSDP
// ("FSDP::pre_forward", "FullyShardedDataParallel._pre_forward") and DDP
// ("DistributedDataParallel.forward"). Each holds one such range's name,
// "" when the trace has none.
struct Pipelines {
  std::string input_dist, fsdp, ddp;
};

bool is_input_dist_range(std::string_view name) {
  return name == "## sparse_data_dist ##" || name == "## wait_sparse_data_dist ##" || name.starts_with("## sdd_");
}

Pipelines pipelines_of(const Context& ctx) {
  Pipelines p;
  for (const ThreadActivity& t : ctx.threads) {
    if (t.spans == nullptr) continue;
    for (size_t i = 0; i < t.spans->size(); ++i) {
      if (t.spans->kind[i] != SpanKind::user) continue;
      const std::string& name = ctx.model.str(t.spans->name[i]);
      if (p.input_dist.empty() && is_input_dist_range(name)) p.input_dist = name;
      if (p.fsdp.empty() && (name.starts_with("FSDP::") || name.starts_with("FullyShardedDataParallel."))) {
        p.fsdp = name;
      }
      if (p.ddp.empty() && name == "DistributedDataParallel.forward") p.ddp = name;
    }
  }
  return p;
}

bool contains_word(std::string_view phase, std::string_view lower_word) {
  std::string lower(phase);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return lower.find(lower_word) != std::string::npos;
}

// How to hide all-to-all or send/recv exchanges launched in `phase`.
std::string exchange_advice(const Pipelines& p, const std::string& phase) {
  std::string pipelined;
  if (!p.input_dist.empty()) {
    pipelined = fmt::format(
        "; the trace shows an input-distribution pipeline (`{}` ranges), which hides the input exchange, not this one",
        p.input_dist);
  }
  if (contains_word(phase, "forward")) {
    return fmt::format(
        "in the forward pass the next operation waits for an exchange's result (an embedding lookup's output, an "
        "expert dispatch): only independent work can run beside it, such as the dense part of the model or another "
        "micro-batch, or a dispatch split into chunks{}",
        pipelined);
  }
  if (!p.input_dist.empty()) {
    return fmt::format(
        "the trace shows an input-distribution pipeline (`{}` ranges), which runs the next batch's exchange beside "
        "this one's compute: it is exposed where that compute had ended or waited; look at what the compute stream "
        "waited for while it ran",
        p.input_dist);
  }
  return "overlap the exchange with the compute of another batch or micro-batch: distribute the next batch's "
         "inputs while this one trains (TorchRec's TrainPipelineSparseDist), split an expert dispatch into "
         "chunks, or give a pipeline more micro-batches";
}

// How to hide all-gathers and reduce-scatters of sharded parameters.
std::string sharded_advice(const Pipelines& p) {
  if (!p.fsdp.empty()) {
    return fmt::format(
        "FSDP is in use (`{}` ranges) and its prefetch does not hide them: each unit's compute is shorter than the "
        "next unit's all-gather, so prefetch further ahead or wrap fewer, larger units",
        p.fsdp);
  }
  return "with sharded parameters (FSDP, ZeRO-3), prefetch: start the next layer's all-gather while this one "
         "computes (FSDP's forward_prefetch and backward_prefetch), and let each reduce-scatter run during the "
         "backward pass";
}

// How to hide the collectives of one operation, most of whose exposed time
// was launched in `phase`.
std::string advice_for(const Context& ctx, const Pipelines& p, CollectiveOp op, const Runs& o,
                       const std::string& phase) {
  if (contains_word(phase, "optimizer")) {
    return "in the optimizer step a distributed optimizer gathers updated parameters or reduces its statistics: "
           "start them asynchronously there and wait where the next forward pass first needs their result";
  }
  switch (op) {
    case CollectiveOp::all_reduce: return all_reduce_advice(ctx, o);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter: return sharded_advice(p);
    case CollectiveOp::all_to_all:
    case CollectiveOp::send_recv: return exchange_advice(p, phase);
    case CollectiveOp::broadcast:
      if (phase == "in `DistributedDataParallel.forward`") {
        return "DDP broadcasts the module's buffers from rank 0 at every forward (broadcast_buffers=True, its "
               "default): if no buffer changes during training, or each rank keeps its own (BatchNorm running "
               "statistics that need no syncing), pass broadcast_buffers=False";
      }
      [[fallthrough]];
    case CollectiveOp::reduce:
    case CollectiveOp::unnamed: return "issue the collectives earlier, so that independent compute runs while they do";
  }
  return "";
}

// The phase that launched most of the runs' exposed time.
const std::pair<const std::string, Runs>& top_phase(const std::map<std::string, Runs>& phases) {
  return *std::max_element(phases.begin(), phases.end(),
                           [](const auto& a, const auto& b) { return a.second.exposed_ns < b.second.exposed_ns; });
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
  const auto& [phase, in_phase] = top_phase(c.by_op_phase[top]);
  const std::string share = in_phase.exposed_ns == c.by_op[top].exposed_ns
                                ? "all"
                                : fmt::format("{} of it", format_duration(in_phase.exposed_ns));
  return fmt::format(
      "most collective time runs with no compute beside it, most of the exposed time in {} ({}, {} launched "
      "{}): {}; if the collectives themselves are slow, compare the ranks: the exposed time includes waiting "
      "inside the collective for the last rank to arrive, which one rank's trace cannot tell apart",
      name_of(op), format_duration(c.by_op[top].exposed_ns), share, phase,
      advice_for(ctx, pipelines_of(ctx), op, c.by_op[top], phase));
}

// The phases of the step that launched the collectives, most exposed
// first, with the operations each launched.
std::string phases_text(const Collectives& c) {
  std::vector<const std::pair<const std::string, Runs>*> phases;
  for (const auto& named : c.by_phase) phases.push_back(&named);
  std::sort(phases.begin(), phases.end(),
            [](const auto* a, const auto* b) { return a->second.exposed_ns > b->second.exposed_ns; });
  constexpr size_t kShown = 4;
  std::vector<std::string> parts;
  for (size_t i = 0; i < phases.size() && i < kShown; ++i) {
    const auto& [phase, runs] = *phases[i];
    std::vector<std::string_view> ops;
    for (size_t k = 0; k < kCollectiveOps; ++k) {
      if (c.by_op_phase[k].contains(phase)) ops.push_back(name_of(CollectiveOp(k)));
    }
    parts.push_back(fmt::format("{} {} exposed ({})", phase, format_duration(runs.exposed_ns), fmt::join(ops, ", ")));
  }
  std::string out = fmt::format("{}", fmt::join(parts, "; "));
  if (phases.size() > kShown) out += fmt::format("; {} more", phases.size() - kShown);
  return out;
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
  f.evidence.push_back({"launched", phases_text(c)});
  if (!c.shared_streams.empty()) {
    f.evidence.push_back(
        {"on compute streams", fmt::format("{} exposed, on stream {}", format_duration(c.shared_exposed_ns),
                                           fmt::join(c.shared_streams, ", "))});
  }
  if (c.by_name.size() == 1) return;  // named with the collective time
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
  const Collectives c = collectives_of(ctx, d);
  // The exposed time is the title's and the impact's figure: not repeated.
  f.evidence.push_back({"collective time",
                        c.by_name.size() == 1
                            ? fmt::format("{}, all in {} `{}`", format_duration(total),
                                          kernels(c.by_name.begin()->second.durations.size()), c.by_name.begin()->first)
                            : format_duration(total)});
  f.evidence.push_back({"overlapped by compute", format_duration(hidden)});
  if (std::vector<int64_t> per_step = exposed_per_step(steps, exposed); !per_step.empty()) {
    auto [lo, hi] = std::minmax_element(per_step.begin(), per_step.end());
    f.evidence.push_back({"exposed per step", fmt::format("median {} over {} steps (from {} to {})",
                                                          format_duration(quantile(per_step, 0.5)), per_step.size(),
                                                          format_duration(*lo), format_duration(*hi))});
  }
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
