// leak: memory live at step boundaries that grows steadily over the steps,
// with where the blocks that outlive their step were allocated.
//
// A training step frees what it allocates (activations, temporaries) and
// keeps a fixed set (weights, gradients, optimizer state): after warm-up,
// what is live when a step ends is the same every step. Live memory that
// grows from one step's end to the next, step after step, is held by
// something that outlives the step: a tensor that keeps its autograd graph
// (`total += loss` with no backward on it), a list that keeps each step's
// outputs, a cache never cleared. The blocks allocated during a step and
// still live when the last step ends are that memory; where they were
// allocated is what the finding names.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "analysis/memory_blocks.h"
#include "analysis/memory_live.h"
#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// The end of each step, one per step number (steps on several threads at
// once end when the last of them does), in time order.
std::vector<int64_t> step_ends(const Context& ctx) {
  std::map<int64_t, int64_t> end_of;  // step number -> end
  for (const StepRange& s : ctx.steps) end_of[s.number] = std::max(end_of[s.number], s.end);
  std::vector<int64_t> ends;
  ends.reserve(end_of.size());
  for (const auto& [number, end] : end_of) ends.push_back(end);
  std::sort(ends.begin(), ends.end());
  return ends;
}

// Blocks allocated after the first step's end and still live at the last
// step's end, by allocation site.
struct Survivors {
  int64_t bytes = 0;
  uint64_t blocks = 0;
  std::vector<bool> in_step;  // by step after warm-up: whether one was allocated in it
};

struct Growth {
  std::vector<int64_t> live;                             // allocated at each step's end
  std::vector<std::pair<std::string, Survivors>> sites;  // most bytes first
  size_t growing = 0;                                    // steps whose end holds more than the previous one's
  int64_t median_step_growth = 0;
  int64_t peak = 0;
};

// The step (1-based after warm-up) an allocation at t belongs to: the
// first whose end is at or after t.
size_t step_of(const std::vector<int64_t>& ends, int64_t t) {
  return size_t(std::lower_bound(ends.begin(), ends.end(), t) - ends.begin());
}

void find_survivors(const Context& ctx, const MemoryEvents& me, const std::vector<int64_t>& ends, Growth& g) {
  auto from = std::upper_bound(me.time.begin(), me.time.end(), ends.front());
  auto to = std::upper_bound(me.time.begin(), me.time.end(), ends.back());
  BlocksByAddress live = replay(me, size_t(from - me.time.begin()), size_t(to - me.time.begin()));
  std::map<std::string, Survivors> by_site;
  for (const auto& [address, b] : live) {
    auto [it, added] = by_site.try_emplace(allocation_site(ctx, b.callsite, b.time));
    Survivors& s = it->second;
    if (added) s.in_step.assign(ends.size() - 1, false);
    s.bytes += b.bytes;
    ++s.blocks;
    s.in_step[step_of(ends, b.time) - 1] = true;
  }
  g.sites.assign(by_site.begin(), by_site.end());
  std::sort(g.sites.begin(), g.sites.end(), [](const auto& a, const auto& b) {
    return a.second.bytes != b.second.bytes ? a.second.bytes > b.second.bytes : a.first < b.first;
  });
}

// Steady growth: the live total at step ends grows in at least three
// steps of four after warm-up (a step that happens to end with a batch
// prefetched may not), over at least three steps, and the median step's
// growth over all of them is a share of the peak worth naming. The median,
// not the first-to-last difference: one step that keeps something for
// good (optimizer state made at its first use, a buffer freed late once)
// is not a leak, and must not make a few bytes a step look like one.
bool grows_steadily(const Growth& g, double min_fraction) {
  size_t steps = g.live.size() - 1;
  int64_t steady = g.median_step_growth * int64_t(steps);
  return steps >= 3 && g.growing * 4 >= steps * 3 && steady > 0 &&
         double(steady) >= min_fraction * double(std::max<int64_t>(1, g.peak));
}

std::optional<Growth> measure_growth(const Context& ctx, const MemoryEvents& me, const std::vector<int64_t>& ends) {
  Growth g;
  g.peak = *std::max_element(me.allocated.begin(), me.allocated.end());
  std::vector<int64_t> step_growth;
  for (int64_t end : ends) {
    g.live.push_back(allocated_at(me, end));
    if (g.live.size() < 2) continue;
    step_growth.push_back(g.live.back() - g.live[g.live.size() - 2]);
    if (step_growth.back() > 0) ++g.growing;
  }
  if (step_growth.empty()) return std::nullopt;
  g.median_step_growth = quantile(step_growth, 0.5);
  if (!grows_steadily(g, ctx.options.leak_min_growth_fraction)) return std::nullopt;
  find_survivors(ctx, me, ends, g);
  return g;
}

std::string site_figures(const Survivors& s, size_t steps) {
  size_t in = size_t(std::count(s.in_step.begin(), s.in_step.end(), true));
  return fmt::format("{} a step ({} in {} block{}, allocated in {} of the {} steps)",
                     format_bytes(s.bytes / int64_t(steps)), format_bytes(s.bytes), format_count(s.blocks),
                     s.blocks == 1 ? "" : "s", in, steps);
}

int64_t survivor_bytes(const Growth& g) {
  int64_t bytes = 0;
  for (const auto& [site, s] : g.sites) bytes += s.bytes;
  return bytes;
}

void add_evidence(Finding& f, const Context& ctx, const MemoryEvents& me, const Growth& g) {
  size_t steps = g.live.size() - 1;
  f.evidence.push_back(
      {"live at step ends", fmt::format("{} after the first step, {} after the last ({} steps later)",
                                        format_bytes(g.live.front()), format_bytes(g.live.back()), steps)});
  f.evidence.push_back({"growth per step", fmt::format("{} (median); grew in {} of {} steps",
                                                       format_bytes(g.median_step_growth), g.growing, steps)});
  f.evidence.push_back({"outlive their step", fmt::format("{} in blocks allocated after the first step and live at "
                                                          "the last step's end",
                                                          format_bytes(survivor_bytes(g)))});
  for (size_t k = 0; k < g.sites.size() && k < 5; ++k) {
    const std::string& site = g.sites[k].first;
    f.evidence.push_back({fmt::format("allocated at {}", site.empty() ? "an unknown call site" : site),
                          site_figures(g.sites[k].second, steps)});
  }
  const Device* dev = ctx.model.device(me.device);
  if (dev != nullptr && dev->memory_capacity > g.peak && g.median_step_growth > 0) {
    f.evidence.push_back(
        {"at this rate", fmt::format("the {} between the peak and capacity is used up in {} more steps",
                                     format_bytes(dev->memory_capacity - g.peak),
                                     format_count((dev->memory_capacity - g.peak) / g.median_step_growth))});
  }
}

// Where the largest share of what outlives its step was allocated: "most
// of it" only when that share is more than half.
std::string largest_site(const Growth& g) {
  if (g.sites.empty() || g.sites.front().first.empty()) return "";
  bool most = 2 * g.sites.front().second.bytes > survivor_bytes(g);
  return fmt::format("; {} what outlives its step was allocated at {}", most ? "most of" : "the largest share of",
                     g.sites.front().first);
}

std::string leak_title(const Context& ctx, const MemoryEvents& me, const Growth& g) {
  size_t steps = g.live.size() - 1;
  return fmt::format("{}: live memory at step ends grows {} a step over {} steps ({} to {}){}",
                     device_label(ctx, me.device), format_bytes(g.median_step_growth), steps,
                     format_bytes(g.live.front()), format_bytes(g.live.back()), largest_site(g));
}

Finding leak_finding(const Context& ctx, const MemoryEvents& me, const std::vector<int64_t>& ends, const Growth& g) {
  Finding f;
  f.rule = "leak";
  f.devices = {me.device};
  // A leak costs no time until memory runs out; it is a warning because
  // it ends the run when it does.
  f.severity = Severity::warning;
  f.title = leak_title(ctx, me, g);
  f.impact_ns = 0;
  f.ranges.push_back({ends.front(), ends.back()});
  add_evidence(f, ctx, me, g);
  f.suggestion =
      "find what keeps these blocks after their step and let it go: a tensor that carries its autograd graph "
      "(`total += loss` with no backward through it: accumulate `loss.item()` or `loss.detach()`, or evaluate under "
      "`torch.no_grad()`), a list that keeps each step's outputs, a cache that is never cleared";
  return f;
}

}  // namespace

void rule_leak(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  std::vector<int64_t> ends = step_ends(ctx);
  if (ends.size() < 4) return;  // a warm-up step and three to grow over
  for (const MemoryEvents& me : ctx.model.memory) {
    if (me.size() == 0) continue;
    if (std::optional<Growth> g = measure_growth(ctx, me, ends)) out.push_back(leak_finding(ctx, me, ends, *g));
  }
}

}  // namespace loupe::prof::analysis
