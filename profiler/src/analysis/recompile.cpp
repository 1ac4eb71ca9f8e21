// recompile: jitted functions compiled again after warm-up, and why.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

enum class Reason { shape, dtype, static_value, new_function, other };

constexpr const char* kReasonNames[] = {"shape change", "dtype change", "static argument change", "new function object",
                                        "other"};
constexpr const char* kReasonFixes[] = {
    ("pad or bucket the varying dimension to a few fixed sizes (mask the padding) so that every step reuses a "
     "compiled signature"),
    "cast inputs to one dtype at the boundary of the jitted function",
    "pass the changing static value as an array argument, or keep it constant",
    "create the jitted function once, outside the loop, and reuse it",
    "compare the signatures in the compile panel and make them stable",
};

// The dtypes of the types in a text like "f32[31,128], i32[]": the word
// before each '['.
std::vector<std::string_view> dtypes_of(std::string_view types) {
  std::vector<std::string_view> out;
  for (size_t open = types.find('['); open != std::string_view::npos; open = types.find('[', open + 1)) {
    size_t word = open;
    while (word > 0 && (std::isalnum(static_cast<unsigned char>(types[word - 1])) || types[word - 1] == '_')) --word;
    out.push_back(types.substr(word, open - word));
  }
  return out;
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// A guard failure as torch.compile's dynamo words it: "tensor 'x' size
// mismatch at index 0. expected 32, actual 40", "... dtype mismatch.
// expected Float, actual Double", or a Python value the graph was
// specialised on ("L['n'] == 3").
Reason classify_guard(std::string_view reason) {
  for (std::string_view shape : {"size mismatch", "stride mismatch", "rank mismatch"}) {
    if (contains(reason, shape)) return Reason::shape;
  }
  if (contains(reason, "dtype mismatch")) return Reason::dtype;
  if (contains(reason, " == ")) return Reason::static_value;
  return Reason::other;
}

// Classifies a miss from its reason text, or from the function object when
// the text is silent. Reasons name the types now and before, as loupe's
// runtime writes them ("arg 0 `x`: now f32[31,128], before f32[32,128]")
// or as JAX explains a cache miss ("* at x, now f32[9,4] and before
// f32[8,4]"; a different weak type is a dtype change in JAX's promotion),
// or the guard that failed, as dynamo does.
Reason classify(std::string_view reason, bool new_object) {
  if (contains(reason, "new function object") || contains(reason, "never seen function") || new_object)
    return Reason::new_function;
  if (contains(reason, "static arg") || contains(reason, "static kwarg")) return Reason::static_value;
  size_t before = reason.find(", before "), skip = 9;
  if (before == std::string_view::npos) before = reason.find(" and before "), skip = 12;
  size_t now = before == std::string_view::npos ? before : reason.rfind("now ", before);
  if (now == std::string_view::npos) return classify_guard(reason);
  std::string_view a = reason.substr(now + 4, before - now - 4);
  std::string_view b = reason.substr(before + skip);
  for (std::string_view end : {";", "\n", " * ", " ("}) b = b.substr(0, b.find(end));
  if (contains(a, "weak_type") || contains(b, "weak_type")) return Reason::dtype;
  return dtypes_of(a) != dtypes_of(b) ? Reason::dtype : Reason::shape;
}

struct Miss {
  uint32_t thread;
  size_t track, index;
  int64_t start, end;
};

// A function's misses in time order; those from first_late on came after
// warm-up.
struct FunctionMisses {
  std::vector<Miss> misses;
  size_t first_late = 0;
};

// Warm-up ends with the warmup_steps-th step (by step number). Without
// steps, each function's first miss is its warm-up.
std::map<StringId, FunctionMisses> misses_by_function(const Context& ctx) {
  int64_t warm_end = INT64_MIN;
  bool by_steps = !ctx.steps.empty() && ctx.options.warmup_steps > 0;
  if (by_steps) {
    std::vector<int64_t> numbers;
    for (const StepRange& s : ctx.steps) numbers.push_back(s.number);
    std::sort(numbers.begin(), numbers.end());
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    int64_t last_warmup_step = numbers[std::min(numbers.size(), size_t(ctx.options.warmup_steps)) - 1];
    for (const StepRange& s : ctx.steps) {
      if (s.number <= last_warmup_step) warm_end = std::max(warm_end, s.end);
    }
  }
  std::map<StringId, FunctionMisses> out;
  for (size_t t = 0; t < ctx.model.compiles.size(); ++t) {
    const Compiles& c = ctx.model.compiles[t];
    for (size_t i = 0; i < c.size(); ++i) {
      if (c.kind[i] == CompileKind::miss) out[c.function[i]].misses.push_back({c.thread, t, i, c.start[i], c.end(i)});
    }
  }
  for (auto& [fn, f] : out) {
    std::sort(f.misses.begin(), f.misses.end(), [](const Miss& a, const Miss& b) { return a.start < b.start; });
    f.first_late = by_steps ? size_t(std::partition_point(f.misses.begin(), f.misses.end(),
                                                          [&](const Miss& m) { return m.start < warm_end; }) -
                                     f.misses.begin())
                            : 1;
    // A function's first compile is never a recompile, whenever it comes
    // (an evaluation function first called at step 100 compiles then).
    f.first_late = std::clamp<size_t>(f.first_late, 1, f.misses.size());
  }
  return out;
}

}  // namespace

std::vector<std::pair<uint32_t, Interval>> late_compiles(const Context& ctx) {
  std::vector<std::pair<uint32_t, Interval>> out;
  for (const auto& [fn, f] : misses_by_function(ctx)) {
    for (size_t i = f.first_late; i < f.misses.size(); ++i)
      out.push_back({f.misses[i].thread, {f.misses[i].start, f.misses[i].end}});
  }
  return out;
}

uint64_t recompiles_after_warmup(const Context& ctx) {
  uint64_t n = 0;
  for (const auto& [fn, f] : misses_by_function(ctx)) n += f.misses.size() - f.first_late;
  return n;
}

void rule_recompile(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  const TraceModel& m = ctx.model;
  for (const auto& [fn, fm] : misses_by_function(ctx)) {
    const std::vector<Miss>& misses = fm.misses;
    std::vector<const Miss*> late;
    for (size_t k = fm.first_late; k < misses.size(); ++k) late.push_back(&misses[k]);
    if (late.empty()) continue;

    int64_t compile_ns = 0, idle_ns = 0;
    size_t per_reason[5] = {};
    std::map<std::string, size_t> reasons, sites, signatures;
    Finding f;
    f.rule = "recompile";
    for (const Miss* miss : late) {
      const Compiles& c = m.compiles[miss->track];
      size_t i = miss->index;
      compile_ns += miss->end - miss->start;
      for (const DeviceActivity& d : ctx.devices) {
        int64_t a = std::max(miss->start, d.window_start), b = std::min(miss->end, d.window_end);
        if (b > a) idle_ns += (b - a) - d.busy.covered(a, b);
      }
      // A different function object at the same call site, same signature:
      // the jit was re-created.
      bool new_object = false;
      for (const Miss& earlier : misses) {
        if (&earlier == miss) break;
        const Compiles& e = m.compiles[earlier.track];
        // The same line, from whichever callers: the call sites' frames.
        if (ctx.callsite_text(e.callsite[earlier.index]) == ctx.callsite_text(c.callsite[i]) &&
            e.signature[earlier.index] == c.signature[i] && e.function_object[earlier.index] != c.function_object[i] &&
            c.function_object[i] != 0) {
          new_object = true;
        }
      }
      Reason r = classify(c.reason[i], new_object);
      ++per_reason[size_t(r)];
      ++reasons[c.reason[i].empty() ? kReasonNames[size_t(r)] : c.reason[i]];
      ++signatures[m.str(c.signature[i])];
      std::string site = ctx.callsite_text(c.callsite[i]);
      if (!site.empty()) ++sites[site];
      f.ranges.push_back({miss->start, miss->end});
      if (std::find(f.threads.begin(), f.threads.end(), miss->thread) == f.threads.end())
        f.threads.push_back(miss->thread);
    }
    // The fix: no compile after warm-up, its host time gone.
    f.fix.remove_host_within = f.ranges;
    f.fix.within_threads = f.threads;
    size_t dominant = size_t(std::max_element(per_reason, per_reason + 5) - per_reason);
    f.impact_ns = compile_ns;
    f.severity = double(compile_ns) >= ctx.options.recompile_error_fraction * double(std::max<int64_t>(ctx.window(), 1))
                     ? Severity::error
                     : Severity::warning;
    f.title = fmt::format("`{}` recompiled {} time{} after warm-up ({}), {} compiling", m.str(fn), late.size(),
                          late.size() == 1 ? "" : "s", kReasonNames[dominant], format_duration(compile_ns));
    f.evidence.push_back({"function", m.str(fn)});
    f.evidence.push_back({"compiles", fmt::format("{} in all, {} after warm-up", misses.size(), late.size())});
    for (size_t r = 0; r < 5; ++r) {
      if (per_reason[r] > 0) f.evidence.push_back({kReasonNames[r], format_count(per_reason[r])});
    }
    // The most frequent reasons, as the runtime worded them.
    std::vector<std::pair<size_t, std::string>> top;
    top.reserve(reasons.size());
    for (auto& [text, n] : reasons) top.push_back({n, text});
    std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t k = 0; k < top.size() && k < 3; ++k) {
      f.evidence.push_back({"reason", fmt::format("{} (x{})", top[k].second, top[k].first)});
    }
    for (const auto& [site, n] : sites) f.evidence.push_back({"called at", fmt::format("{} (x{})", site, n)});
    f.evidence.push_back({"signatures", format_count(signatures.size())});
    // Without device operations (a JAX program on its CPU backend) there is
    // no device time to compare the compiles with.
    f.evidence.push_back({"device idle while compiling", ctx.devices.empty()
                                                             ? "cannot tell: the trace has no device operations"
                                                             : format_duration(idle_ns)});
    f.suggestion = kReasonFixes[dominant];
    out.push_back(std::move(f));
  }
}

}  // namespace loupe::prof::analysis
