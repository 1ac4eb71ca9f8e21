// copies: time a device spent copying or setting memory with no kernel
// running beside it. That time computes nothing; on a device that sets the
// pace of the run it is time a step could lose, and the ops that issue the
// copies (a clone or a contiguous that need not be, an upload not
// overlapped with compute, gradients zeroed) are what to change. Copies
// that overlap kernels cost nothing here: the copy engines ran them beside
// the work.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// Copies of one kind ("DtoD", "HtoD", ..., or "memset"), or of one kind from
// one source.
struct CopyTime {
  int64_t alone_ns = 0;  // each copy's time with no kernel beside it, summed
  uint64_t count = 0;
  int64_t bytes = 0;
  int64_t own_stream_ns = 0;  // of alone_ns, on streams that run no kernel
};

struct CopiesOfDevice {
  std::map<std::string, CopyTime> by_kind;
  std::map<std::pair<std::string, std::string>, CopyTime> by_source;  // (kind, source)
};

std::string kind_of(const DeviceOps& s, size_t i) {
  return s.kind[i] == DeviceOpKind::memset ? "memset" : std::string(name_of(s.copy_kind[i]));
}

// Where a copy came from: the chain of ops around the call that queued it,
// or that call's name when nothing encloses it.
std::string source_of(const Context& ctx, uint64_t correlation) {
  const EventRef* at = correlation == 0 ? nullptr : ctx.launch_of(correlation);
  if (at == nullptr) return "no recorded launch";
  const Launches& l = ctx.model.launches[at->track];
  std::string chain = ctx.enclosing_chain(l.thread, l.start[at->index]);
  return chain.empty() ? std::string(ctx.model.str(l.name[at->index])) : chain;
}

CopiesOfDevice copies_of(const Context& ctx, const DeviceActivity& d) {
  CopiesOfDevice c;
  for (const DeviceOps* s : d.streams) {
    const bool runs_kernels = std::find(s->kind.begin(), s->kind.end(), DeviceOpKind::kernel) != s->kind.end();
    for (size_t i = 0; i < s->size(); ++i) {
      if (s->kind[i] != DeviceOpKind::memcpy && s->kind[i] != DeviceOpKind::memset) continue;
      int64_t alone = s->dur[i] - d.kernels.covered(s->start[i], s->end(i));
      if (alone <= 0) continue;
      std::string kind = kind_of(*s, i);
      for (CopyTime* t : {&c.by_kind[kind], &c.by_source[{kind, source_of(ctx, s->correlation[i])}]}) {
        t->alone_ns += alone;
        t->count += 1;
        t->bytes += s->bytes[i];
        t->own_stream_ns += runs_kernels ? 0 : alone;
      }
    }
  }
  return c;
}

template <typename Map>
std::vector<typename Map::const_pointer> costliest(const Map& m) {
  std::vector<typename Map::const_pointer> out;
  out.reserve(m.size());
  for (const auto& entry : m) out.push_back(&entry);
  std::sort(out.begin(), out.end(), [](auto a, auto b) { return a->second.alone_ns > b->second.alone_ns; });
  return out;
}

std::string copies_text(const CopyTime& t) {
  return fmt::format("{} alone, {} {}, {}", format_duration(t.alone_ns), format_count(t.count),
                     t.count == 1 ? "op" : "ops", format_bytes(t.bytes));
}

// What to change, for one kind of copy. Host copies already on a stream of
// their own were free to overlap: they ran alone because nothing was queued
// beside them, and moving them changes nothing.
std::string advice_for(const std::string& kind, const CopyTime& t) {
  if ((kind == "HtoD" || kind == "DtoH") && 2 * t.own_stream_ns >= t.alone_ns) {
    return fmt::format(
        "the {} copies already run on streams with no kernels ({} of their time alone): nothing was queued beside "
        "them, so the remedy is on the host that feeds the device, not in the copies",
        kind, format_duration(t.own_stream_ns));
  }
  if (kind == "DtoD") {
    return "device-to-device copies compute nothing: look at the ops that make them (a clone, a contiguous or a "
           "copy_ into a buffer), drop those a view would do, or let a compiler fuse them (torch.compile, jax.jit)";
  }
  if (kind == "HtoD") {
    return "uploads ran with no kernel beside them: upload from pinned memory with non_blocking=True ahead of use "
           "(the DataLoader's pin_memory, the next batch prefetched on a side stream), so that the copy engine "
           "works while the previous step computes";
  }
  if (kind == "DtoH") {
    return "reads ran with no kernel beside them: read back less often, or asynchronously into pinned memory, so "
           "that kernels keep running while the copy engine works";
  }
  if (kind == "memset") {
    return "memory set with no kernel beside it is usually zeroing (optimizer.zero_grad() without set_to_none, "
           "torch.zeros for a buffer that is overwritten anyway): set gradients to None, allocate with empty";
  }
  return "copies ran with no kernel beside them: overlap them with compute on a stream of their own";
}

// Advice for each kind that holds a quarter or more of the copy-only time:
// one kind rarely explains it all (TorchRec's batch upload beside DDP's
// gradient copies).
template <typename Kinds>
std::string advice_for_kinds(const Kinds& kinds, int64_t alone) {
  std::string out;
  for (const auto* k : kinds) {
    if (!out.empty() && 4 * k->second.alone_ns < alone) break;
    out += (out.empty() ? "" : "; ") + advice_for(k->first, k->second);
  }
  return out;
}

void add_finding(const Context& ctx, const DeviceActivity& d, std::vector<Finding>& out) {
  const AnalysisOptions& o = ctx.options;
  const IntervalSet copy_only = IntervalSet::subtract(d.copies, d.kernels);
  const int64_t alone = copy_only.length();
  const double window = double(std::max<int64_t>(ctx.window(), 1));
  if (double(alone) < o.copy_shown_fraction * window) return;
  const CopiesOfDevice c = copies_of(ctx, d);
  const auto kinds = costliest(c.by_kind);
  const auto sources = costliest(c.by_source);
  const double busy_share = double(d.busy.length()) / double(std::max<int64_t>(d.window_end - d.window_start, 1));
  Finding f;
  f.rule = "copies";
  f.devices = {d.device};
  f.impact_ns = alone;  // inside the device's window, so within the active window
  const auto& [top_source, top_time] = *sources.front();
  f.title = fmt::format("{}: {} copying with no kernel running ({} of the window); the largest share, {}, {} from `{}`",
                        device_label(ctx, d.device), format_duration(alone), format_percent(double(alone) / window),
                        format_duration(top_time.alone_ns), top_source.first, top_source.second);
  f.evidence.push_back({"device busy", fmt::format("{} of its window", format_percent(busy_share))});
  for (const auto* k : kinds) f.evidence.push_back({k->first, copies_text(k->second)});
  for (size_t i = 0; i < sources.size() && i < 4; ++i) {
    const auto& [key, t] = *sources[i];
    f.evidence.push_back({"from", fmt::format("`{}`: {} {}", key.second, key.first, copies_text(t))});
  }
  for (const Interval& p : copy_only.intervals()) {
    if (f.ranges.size() == 20) break;
    f.ranges.push_back({p.start, p.end});
  }
  f.suggestion = advice_for_kinds(kinds, alone);
  const bool sets_the_pace = busy_share >= o.device_bound_fraction;
  f.severity = sets_the_pace && double(alone) >= o.copy_warning_fraction * window ? Severity::warning : Severity::info;
  if (!sets_the_pace) {
    f.suggestion = fmt::format(
        "minor while the host sets the pace: the device is busy {} of its window, under the {} at which it sets the "
        "pace, so fewer copies shorten the run only once the idle is gone; {}",
        format_percent(busy_share), format_percent(o.device_bound_fraction), f.suggestion);
  } else if (f.severity == Severity::info) {
    f.suggestion =
        fmt::format("minor: {} of the window, under the {} at which this rule warns; {}",
                    format_percent(double(alone) / window), format_percent(o.copy_warning_fraction), f.suggestion);
  }
  out.push_back(std::move(f));
}

}  // namespace

void rule_copies(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  for (const DeviceActivity& d : ctx.devices) {
    if (!d.copies.empty()) add_finding(ctx, d, out);
  }
}

}  // namespace loupe::prof::analysis
