// idle-gap: when each device sat idle inside its active window, and why.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "analysis/collective_op.h"
#include "analysis/host_speed.h"
#include "analysis/rules.h"
#include "analysis/runtime_calls.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// What a gap was behind when the trace names nothing more precise than its
// cause: a finding's cause line already says all such a group would.
constexpr std::string_view kDispatching = "dispatching eager ops";
constexpr std::string_view kLaunching = "launching";
constexpr std::string_view kBetweenOps = "between ops";
constexpr std::string_view kNothingRecorded = "nothing recorded";
constexpr std::string_view kNoLaunch = "no launch recorded";
constexpr std::string_view kStartUp = "start-up";

bool names_nothing(std::string_view what) {
  return what == kDispatching || what == kLaunching || what == kBetweenOps || what == kNothingRecorded ||
         what == kNoLaunch;
}

std::string compile_detail(const Context& ctx, int64_t a, int64_t b) {
  for (const Compiles& c : ctx.model.compiles) {
    for (size_t i = 0; i < c.size(); ++i) {
      if (c.kind[i] != CompileKind::hit && c.start[i] < b && c.end(i) > a) {
        // Ahead of time (compile_for) is a start-up cost paid once, which
        // the user chose: say so, so that it is not mistaken for a recompile.
        return fmt::format("{}compile of {}", c.kind[i] == CompileKind::aot ? "ahead-of-time " : "",
                           ctx.model.str(c.function[i]));
      }
    }
  }
  return "compile";
}

// What the thread was blocked in during [a, b): the synchronous copy or the
// wait span covering most of it, named by its call site or enclosing ops.
// API calls on one thread follow each other, so the search back from b
// stops at the first one that ended before a.
std::string blocked_what(const Context& ctx, const ThreadActivity* t, int64_t a, int64_t b) {
  std::string best;
  int64_t best_covered = 0;
  auto consider = [&](int64_t start, int64_t end, auto describe) {
    int64_t covered = std::min(b, end) - std::max(a, start);
    if (covered > best_covered) best_covered = covered, best = describe();
  };
  for (const Transfers& tr : ctx.model.transfers) {
    if (t != nullptr && tr.thread != t->thread) continue;
    for (size_t i = lower_bound_time(tr.start, b); i-- > 0 && tr.end(i) > a;) {
      if (!tr.synchronous[i]) continue;
      consider(tr.start[i], tr.end(i), [&] {
        std::string site = ctx.callsite_text(tr.callsite[i]);
        if (site.empty()) site = ctx.enclosing_chain(tr.thread, tr.start[i]);
        return fmt::format("synchronous {} copy{}{}", name_of(tr.direction[i]), site.empty() ? "" : " in ", site);
      });
    }
  }
  for (const ThreadActivity& th : ctx.threads) {
    if ((t != nullptr && &th != t) || th.spans == nullptr) continue;
    const HostSpans& s = *th.spans;
    for (size_t i = lower_bound_time(s.start, b); i-- > 0;) {
      if (s.kind[i] != SpanKind::wait) continue;
      if (s.end(i) <= a) break;
      consider(s.start[i], s.end(i), [&] {
        std::string chain = ctx.enclosing_chain(th.thread, s.start[i]);
        return fmt::format("{}{}{}", chain, chain.empty() ? "" : " > ", ctx.model.str(s.name[i]));
      });
    }
  }
  return best.empty() ? "waiting on the device" : best;
}

// How much of [a, b) an activity must cover to be its cause: at least 1 ns.
int64_t needed(const Context& ctx, int64_t a, int64_t b) {
  return std::max<int64_t>(int64_t(ctx.options.cause_min_coverage * double(b - a)), 1);
}

bool is_eager_span(const Context& ctx, const HostSpans& s, size_t i) {
  return is_eager_op(s.kind[i], ctx.model.str(s.name[i]));
}

// The innermost eager-op span open on the thread at time t, or -1.
int64_t eager_op_at(const Context& ctx, const ThreadActivity& t, int64_t time) {
  std::vector<uint32_t> open = t.code_spans_at(time);
  for (size_t k = open.size(); k-- > 0;) {
    if (is_eager_span(ctx, *t.spans, open[k])) return open[k];
  }
  return -1;
}

// loupe's runtime dispatching an op eagerly is launch work, op by op.
void dispatching(const Context& ctx, const ThreadActivity& t, size_t span, IdleGap& g) {
  g.cause = GapCause::launch;
  g.what = kDispatching;
  g.detail = fmt::format("{} dispatching `{}`", thread_label(ctx, t.thread), ctx.model.str(t.spans->name[span]));
}

// The host's work inside `span` at `time`: the input pipeline when a
// DataLoader range is open (PyTorch names its iterator's ranges
// "enumerate(DataLoader)#..."), else what the innermost span's name says.
HostWork span_work(const Context& ctx, const ThreadActivity& t, size_t span, int64_t time) {
  for (uint32_t i : t.code_spans_at(time)) {
    if (ctx.model.str(t.spans->name[i]).find("DataLoader") != std::string::npos) return HostWork::input_pipeline;
  }
  return runtime_call_kind(ctx.model.str(t.spans->name[span]));
}

// How much of [a, b) the thread spent in spans named `name` whose chain of
// enclosing ranges is `chain`: a gap often holds several such calls (two
// cudaMalloc in a row inside one convolution), and they are its cause
// together.
int64_t time_in_chain(const Context& ctx, const ThreadActivity& t, const std::string& chain, uint32_t name, int64_t a,
                      int64_t b) {
  int64_t total = 0;
  for (const std::vector<uint32_t>& at : t.code_by_depth) {
    auto it = std::partition_point(at.begin(), at.end(), [&](uint32_t i) { return t.spans->end(i) <= a; });
    for (; it != at.end() && t.spans->start[*it] < b; ++it) {
      if (t.spans->name[*it] != name) continue;
      const int64_t from = std::max(a, t.spans->start[*it]);
      if (ctx.enclosing_chain(t.thread, from, t.spans->depth[*it]) == chain) {
        total += std::min(b, t.spans->end(*it)) - from;
      }
    }
  }
  return total;
}

// The host's side of a gap: on the thread that launched the operation ending
// it, from the gap's start until that launch call returned.
struct HostWindow {
  const ThreadActivity* thread = nullptr;
  int64_t start = 0, end = 0;
  int64_t launched = 0;  // when the launch call began
  const Launches* launches = nullptr;
  size_t launch = 0;  // the call, in `launches`
  FirstRuns* first_runs = nullptr;
};

// A host window that start-up calls fill (runtime_calls.h): named by the
// calls, summed by name, and by where the longest began.
bool start_up(const Context& ctx, const HostWindow& w, int64_t at_least, IdleGap& g) {
  const ThreadActivity& t = *w.thread;
  const RuntimeCalls calls = runtime_calls_in(ctx, t, *w.first_runs, w.start, w.end);
  if (calls.start_up_ns < at_least) return false;
  const CallsOfName* longest = &calls.by_name.front();
  for (const CallsOfName& c : calls.by_name) {
    if (c.start_up_ns > longest->start_up_ns) longest = &c;
  }
  g.cause = GapCause::host_work;
  g.work = HostWork::start_up;
  g.what = fmt::format("{} in `{}`", kStartUp, ctx.enclosing_chain(t.thread, longest->first_call_at));
  g.detail = fmt::format("{} on {}: {} of the gap in calls only start-up makes that long: {}", g.what,
                         thread_label(ctx, t.thread), format_duration(calls.start_up_ns), runtime_calls_text(calls, 4));
  return true;
}

void host_side(const Context& ctx, const HostWindow& w, IdleGap& g) {
  const ThreadActivity& t = *w.thread;
  const int64_t a = w.start, b = w.end;
  const int64_t at_least = needed(ctx, a, b);
  const std::string thread = thread_label(ctx, t.thread);
  if (t.compile.covered(a, b) >= at_least) {
    g.cause = GapCause::compile;
    g.what = compile_detail(ctx, a, b);
    g.detail = g.what;
    return;
  }
  if (t.blocked.covered(a, b) >= at_least) {
    g.cause = GapCause::sync;
    g.what = blocked_what(ctx, &t, a, b);
    g.detail = fmt::format("{} on {}", g.what, thread);
    return;
  }
  if (start_up(ctx, w, at_least, g)) return;
  if (int64_t call = w.end - w.launched; call >= at_least) {
    if (int64_t eager = eager_op_at(ctx, t, w.launched); eager >= 0) return dispatching(ctx, t, size_t(eager), g);
    // The launch call itself took the time (module loading on a first
    // launch, a full launch queue).
    std::string chain = ctx.enclosing_chain(t.thread, w.launched);
    g.cause = GapCause::host_work;
    g.what = fmt::format("{}{}{}", chain, chain.empty() ? "" : " > ", ctx.model.str(w.launches->name[w.launch]));
    g.work = runtime_call_kind(ctx.model.str(w.launches->name[w.launch]));
    g.detail = fmt::format("host in `{}` on {}: one {} call", g.what, thread, format_duration(call));
    return;
  }
  if (size_t n = t.launches_in(a, w.launched); n >= 2) {
    g.cause = GapCause::launch;
    g.what = kLaunching;
    g.detail = fmt::format("{} issued {} launches during the gap", thread, format_count(n));
    return;
  }
  if (int64_t span = t.deepest_code_span_covering(a, b, at_least, ctx.model); span >= 0) {
    if (is_eager_span(ctx, *t.spans, size_t(span))) return dispatching(ctx, t, size_t(span), g);
    const int64_t inside = std::max(a, t.spans->start[size_t(span)]);
    g.cause = GapCause::host_work;
    // The chain ends at the span that covers the wait: what was open inside
    // it at one moment (a brief op the thread was leaving) is not the cause.
    g.what = ctx.enclosing_chain(t.thread, inside, t.spans->depth[size_t(span)]);
    g.work = span_work(ctx, t, size_t(span), inside);
    g.detail = fmt::format("host in `{}` on {}", g.what, thread);
    // The named calls explain most of the wait, not always all of it (a 6 s
    // cudaFree in a 10 s gap): say how much, so that the gap's length is
    // not read as theirs, and name the launch call that ended the gap when
    // it took most of the rest (a first launch loading its module).
    if (int64_t in_what = time_in_chain(ctx, t, g.what, t.spans->name[size_t(span)], a, b); in_what < b - a) {
      g.detail += fmt::format(" for {} of the gap", format_duration(in_what));
      if (int64_t call = b - w.launched; call > 0 && 2 * call >= b - a - in_what) {
        g.detail += fmt::format(", then {} in the `{}` of the op that ended it", format_duration(call),
                                ctx.model.str(w.launches->name[w.launch]));
      }
    }
    return;
  }
  // Nothing took most of the wait, but the device ran dry while the host
  // waited on it (an item() read, a stream synchronize): the time after is
  // the host catching up from that sync.
  if (t.blocked.covered(a - 1, a) > 0) {
    g.cause = GapCause::sync;
    g.what = blocked_what(ctx, &t, a - 1, b);
    g.detail = fmt::format("{} on {}: the device ran out of work while the host waited on it", g.what, thread);
    return;
  }
  if (int64_t recorded = t.code_covered(a, b); recorded > 0 || ctx.step_at(t.thread, a) != nullptr) {
    g.cause = GapCause::between_ops;
    std::string chain = ctx.enclosing_chain(t.thread, a + (b - a) / 2);
    g.what = chain.empty() ? std::string(kBetweenOps) : fmt::format("{} in `{}`", kBetweenOps, chain);
    g.detail = fmt::format(
        "host {} on {}: {} of the wait inside recorded ops, the rest in code nothing records "
        "(Python, or the framework between ops)",
        g.what, thread, format_percent(double(recorded) / double(std::max<int64_t>(b - a, 1))));
    return;
  }
  g.what = kNothingRecorded;
  g.detail = fmt::format("nothing was recorded on {} while it was late", thread);
}

// What kept the device idle in [a, b): docs/analyses.md gives the order of
// priority and why.
IdleGap classify(const Context& ctx, const DeviceActivity& d, FirstRuns& first_runs, int64_t a, int64_t b) {
  IdleGap g{a, b, GapCause::unknown, "", ""};
  OpAt next = first_op_from(d, b);  // the op that ended the gap
  if (next.stream == nullptr) return g;
  const DeviceOps& s = *next.stream;
  const size_t i = next.index;
  const EventRef* l = ctx.launch_of(s.correlation[i]);
  if (l == nullptr) {
    // Without the launch, host- and device-side cannot be told apart; only
    // a compile or a blocking wait on every thread says something.
    const int64_t need = needed(ctx, a, b);
    if (ctx.compile_all.covered(a, b) >= need) {
      g.cause = GapCause::compile;
      g.what = g.detail = compile_detail(ctx, a, b);
    } else if (ctx.blocked_all.covered(a, b) >= need) {
      g.cause = GapCause::sync;
      g.what = g.detail = blocked_what(ctx, nullptr, a, b);
      // The host was still blocked on the device when the device resumed:
      // what it waited for was queued and not yet run, so the device held
      // back work it already had, and the host's wait did not cause the gap.
      if (ctx.blocked_all.covered(b - 1, b + 1) == 2) {
        g.cause = GapCause::device_wait;
        g.what = fmt::format("`{}` on stream {}", ctx.model.str(s.name[i]), s.stream);
        g.detail = fmt::format(
            "{} has no recorded launch and started while the host was still blocked on the device ({}): the "
            "device held back work it already had",
            g.what, g.detail);
      }
    } else {
      g.what = kNoLaunch;
      g.detail = fmt::format("`{}` has no recorded launch: cannot tell whether the host or the device was late",
                             ctx.model.str(s.name[i]));
    }
    return g;
  }
  const Launches& launches = ctx.model.launches[l->track];
  const int64_t launched = launches.start[l->index];
  const int64_t returned = std::min(b, launches.end(l->index));
  // Queued before the gap, or launched in it and started well after its
  // launch call returned: the device (or driver) held it back, waiting on
  // an event, another stream or its own scheduling.
  if (launched < a || b - returned > returned - a) {
    g.cause = GapCause::device_wait;
    g.what = fmt::format("`{}` on stream {}", ctx.model.str(s.name[i]), s.stream);
    g.detail = launched < a ? fmt::format("{} was queued {} before the gap and started after it", g.what,
                                          format_duration(a - launched))
                            : fmt::format(
                                  "{} was launched {} into the gap and started {} after its launch "
                                  "returned",
                                  g.what, format_duration(launched - a), format_duration(b - returned));
    return g;
  }
  const ThreadActivity* t = ctx.thread(launches.thread);
  if (t != nullptr) host_side(ctx, {t, a, returned, launched, &launches, l->index, &first_runs}, g);
  return g;
}

}  // namespace

std::string device_label(const Context& ctx, uint32_t device) {
  const Device* d = ctx.model.device(device);
  return d ? fmt::format("device {} ({})", device, d->name) : fmt::format("device {}", device);
}

std::string thread_label(const Context& ctx, uint32_t thread) {
  const Thread* t = ctx.model.thread(thread);
  return t ? fmt::format("thread `{}`", t->name) : fmt::format("thread {}", thread);
}

void measure_idle(const Context& ctx, AnalysisReport& report) {
  const AnalysisOptions& opt = ctx.options;
  FirstRuns first_runs(ctx);
  for (const DeviceActivity& d : ctx.devices) {
    DeviceIdle di;
    di.device = d.device;
    di.window_start = d.window_start;
    di.window_end = d.window_end;
    di.busy_ns = d.busy.length();
    di.idle_ns = (d.window_end - d.window_start) - di.busy_ns;
    di.compute_ns = d.compute.length();
    di.collective_ns = d.collectives.length();
    di.compute_collective_overlap_ns = di.collective_ns - IntervalSet::subtract(d.collectives, d.compute).length();
    for (const Interval& gap : d.busy.gaps(d.window_start, d.window_end, opt.min_gap_ns)) {
      IdleGap g = classify(ctx, d, first_runs, gap.start, gap.end);
      di.cause_ns[size_t(g.cause)] += g.end - g.start;
      di.gaps.push_back(std::move(g));
    }
    report.devices.push_back(std::move(di));

    // HTA's classes, stream by stream, between consecutive operations.
    for (const DeviceOps* s : d.streams) {
      StreamIdle si{s->device, s->stream, 0, 0, 0};
      int64_t prev_end = INT64_MIN;
      for (size_t i = 0; i < s->size(); ++i) {
        if (s->kind[i] == DeviceOpKind::sync) continue;  // waiting is idle
        int64_t gap = prev_end == INT64_MIN ? 0 : s->start[i] - prev_end;
        prev_end = std::max(prev_end, s->end(i));
        if (gap <= 0) continue;
        const EventRef* l = ctx.launch_of(s->correlation[i]);
        if (l != nullptr && ctx.model.launches[l->track].start[l->index] > s->start[i] - gap) {
          si.host_wait_ns += gap;
        } else if (gap < opt.kernel_wait_max_ns) {
          si.kernel_wait_ns += gap;
        } else {
          si.other_ns += gap;
        }
      }
      report.streams.push_back(si);
    }
  }
}

namespace {

// Gap time grouped by cause and by what it was behind, largest first.
struct CauseGroup {
  GapCause cause;
  const std::string* what;
  HostWork work;  // its first gap's
  int64_t ns = 0;
  size_t gaps = 0;
};

std::vector<CauseGroup> group_causes(const DeviceIdle& d) {
  std::map<std::pair<GapCause, std::string_view>, CauseGroup> groups;
  for (const IdleGap& g : d.gaps) {
    CauseGroup& c = groups.try_emplace({g.cause, g.what}, CauseGroup{g.cause, &g.what, g.work}).first->second;
    c.ns += g.end - g.start;
    ++c.gaps;
  }
  std::vector<CauseGroup> out;
  out.reserve(groups.size());
  for (auto& [key, c] : groups) out.push_back(c);
  std::sort(out.begin(), out.end(), [](const CauseGroup& x, const CauseGroup& y) { return x.ns > y.ns; });
  return out;
}

std::string_view suggestion_for(GapCause c) {
  switch (c) {
    case GapCause::compile:
      return "compile before the loop (compile_for, or warm-up steps) and stop the recompiles the recompile finding "
             "lists; ahead-of-time compiles cost their time once, at start-up";
    case GapCause::sync:
      return "take the blocking reads and synchronisations out of the loop: keep values on the device and read them "
             "every N steps (item(), .cpu(), torch.cuda.synchronize, block_until_ready all wait for the device); "
             "copy from pinned memory asynchronously";
    case GapCause::host_work:  // host_work_suggestion says more
      return "move that host work off the critical path";
    case GapCause::launch:
      return "the host cannot issue work fast enough: fuse operations into fewer, longer kernels (jit, "
             "torch.compile) or replay them as a CUDA graph";
    case GapCause::between_ops:
      return "the host spends the time between ops in Python or framework code: fewer, larger ops (torch.compile, "
             "jit, CUDA graphs) or a profile with Python stacks (with_stack) shows which code";
    case GapCause::device_wait:
      return "the work was queued in time but the device waited: look at the event waits and stream dependencies "
             "before the named operations";
    case GapCause::unknown:
      return "look at the timeline around the largest gaps: the trace does not say what the host was doing";
  }
  return "";
}

// The advice for host work, from what the largest group of host-work gaps
// was behind: `leaf` is the innermost name of its chain.
std::string host_work_suggestion(HostWork work, std::string_view leaf) {
  switch (work) {
    case HostWork::input_pipeline:
      return "the device waited for the next batch: load batches in DataLoader workers (num_workers > 0, "
             "pin_memory=True) and keep some prefetched, so that one is ready when a step ends";
    case HostWork::launch_call:
      return fmt::format(
          "the host was inside `{}`: a launch blocks that long when it loads the kernel's module (CUDA and HIP load "
          "modules lazily, at a kernel's first launch) or sets up a library, in a program's first steps; profile "
          "after warm-up steps (CUDA_MODULE_LOADING=EAGER loads modules at start-up instead)",
          leaf);
    case HostWork::memory_call:
      return fmt::format(
          "the host was inside `{}`: reserving and releasing device memory with the driver is slow, and freeing "
          "waits for the device; PyTorch's caching allocator does it when its cache misses or is emptied "
          "(torch.cuda.empty_cache), and libraries reserve their workspaces at first use: keep empty_cache out of "
          "the loop, and profile after warm-up steps",
          leaf);
    case HostWork::runtime_call:
      return fmt::format(
          "the host was inside `{}`, a runtime call that is not a launch, a copy or an allocation (set-up or a "
          "query: streams, events, handles, device properties): make such calls once, before the loop; in the "
          "first steps they are start-up, which warm-up steps keep out of a profile",
          leaf);
    case HostWork::start_up:
      return "the device waited for the program's start-up, not for its steady state: a kernel's first launch "
             "loads its module (CUDA and HIP load modules lazily), and creating the context or a library's handle "
             "(cuDNN, cuBLAS) and the first reservations of memory take seconds once; profile after warm-up steps "
             "(torch.profiler.schedule(wait=1, warmup=1, active=3) records from the third step), and set "
             "CUDA_MODULE_LOADING=EAGER to load every module at start-up instead of at each first launch";
    case HostWork::code:
      if (is_collective_call(leaf)) {
        return fmt::format(
            "the host was issuing collectives (`{}`): each call costs host time before its kernel is queued, so "
            "many small ones (a collective per gradient) keep the device waiting; fewer, larger ones (DDP's "
            "gradient buckets, a larger bucket_cap_mb, a flat buffer) cut the calls: the communication finding "
            "counts them per step",
            leaf);
      }
      return fmt::format(
          "move that host work (`{}`) off the critical path: make it cheaper, or run it ahead of the device on "
          "another thread; if it is the framework issuing the step's operations, replay them as a CUDA graph "
          "(torch.compile's reduce-overhead mode)",
          leaf);
  }
  return "";
}

// The host-work group that explains the most gap time, or nullptr.
const CauseGroup* largest_host_work(const std::vector<CauseGroup>& groups) {
  for (const CauseGroup& c : groups) {
    if (c.cause == GapCause::host_work) return &c;
  }
  return nullptr;
}

std::string suggestion(GapCause dominant, const std::vector<CauseGroup>& groups) {
  const CauseGroup* c = largest_host_work(groups);
  if (dominant == GapCause::host_work && c != nullptr) {
    const size_t last = c->what->rfind(" > ");
    return host_work_suggestion(c->work, last == std::string::npos ? *c->what : c->what->substr(last + 3));
  }
  return std::string(suggestion_for(dominant));
}

// A host that runs even its bookkeeping ops many times slower than a
// typical run is slow at everything: the steady host time the device
// waited for is then first the host's, not one op's. Start-up is not
// steady time, and is advised on as such.
bool slow_host_explains(const HostSpeed& speed, const AnalysisOptions& opt, GapCause dominant,
                        const std::vector<CauseGroup>& groups) {
  if (!speed.judged || speed.slowdown < opt.host_slowdown) return false;
  if (dominant != GapCause::host_work && dominant != GapCause::between_ops) return false;
  const CauseGroup* c = largest_host_work(groups);
  return c == nullptr || c->work != HostWork::start_up;
}

std::string slow_host_suggestion(const HostSpeed& speed, const std::string& then) {
  return fmt::format(
      "the host ran every op slowly: its bookkeeping ops, which do the same few microseconds of work in any "
      "program, took {:.1f}x a typical profiled run's time, so the host time the device waited for is no one op's "
      "fault; look first for CPU contention (more busy threads than cores: a process per GPU, each with DataLoader "
      "workers and OpenMP or MKL threads; pin each rank to its own cores) or a slow or throttled CPU, and for the "
      "profiler's own cost (with_stack, record_shapes and profile_memory add time to every op); then, {}",
      speed.slowdown, then);
}

}  // namespace

void rule_idle_gap(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  const AnalysisOptions& opt = ctx.options;
  const HostSpeed speed = host_speed(ctx.model);
  for (const DeviceIdle& d : report.devices) {
    if (d.gaps.empty()) continue;
    int64_t window = d.window_end - d.window_start;
    int64_t in_gaps = 0;
    for (const IdleGap& g : d.gaps) in_gaps += g.end - g.start;
    double fraction = window > 0 ? double(d.idle_ns) / double(window) : 0;
    Finding f;
    f.rule = "idle-gap";
    f.severity = fraction >= opt.idle_error_fraction     ? Severity::error
                 : fraction >= opt.idle_warning_fraction ? Severity::warning
                                                         : Severity::info;
    f.title = fmt::format("{} idle {} of its active window: {} in {} gap{} of at least {}", device_label(ctx, d.device),
                          format_percent(fraction), format_duration(in_gaps), format_count(d.gaps.size()),
                          d.gaps.size() == 1 ? "" : "s", format_duration(opt.min_gap_ns));
    f.impact_ns = in_gaps;
    f.devices = {d.device};
    if (d.window_start != ctx.window_start || d.window_end != ctx.window_end) {  // else the report's
      f.evidence.push_back(
          {"active window", fmt::format("{} ({} to {})", format_duration(window), format_duration(d.window_start),
                                        format_duration(d.window_end))});
    }
    f.evidence.push_back({"busy (union of all streams)", format_duration(d.busy_ns)});
    f.evidence.push_back({"idle", fmt::format("{} ({})", format_duration(d.idle_ns), format_percent(fraction))});
    size_t dominant = size_t(GapCause::unknown);
    for (size_t c = 0; c < kGapCauses; ++c) {
      if (d.cause_ns[c] == 0) continue;
      if (d.cause_ns[c] > d.cause_ns[dominant]) dominant = c;
      f.evidence.push_back({fmt::format("cause: {}", name_of(GapCause(c))),
                            fmt::format("{} ({} of gap time)", format_duration(d.cause_ns[c]),
                                        format_percent(double(d.cause_ns[c]) / double(in_gaps)))});
    }
    std::vector<CauseGroup> groups = group_causes(d);
    const size_t listed = size_t(std::max(opt.largest_gaps, 0));
    size_t behind = 0;
    for (size_t i = 0; i < groups.size() && behind < listed; ++i) {
      const CauseGroup& c = groups[i];
      if (c.ns == d.cause_ns[size_t(c.cause)] && names_nothing(*c.what)) continue;  // its cause line says it
      ++behind;
      f.evidence.push_back(
          {fmt::format("behind {}", name_of(c.cause)),
           fmt::format("{}: {} in {} gap{} ({} of gap time)", *c.what, format_duration(c.ns), format_count(c.gaps),
                       c.gaps == 1 ? "" : "s", format_percent(double(c.ns) / double(in_gaps)))});
    }
    std::vector<const IdleGap*> largest;
    for (const IdleGap& g : d.gaps) largest.push_back(&g);
    size_t shown = std::min(largest.size(), listed);
    std::partial_sort(largest.begin(), largest.begin() + long(shown), largest.end(),
                      [](const IdleGap* x, const IdleGap* y) { return x->end - x->start > y->end - y->start; });
    for (size_t i = 0; i < shown; ++i) {
      const IdleGap& g = *largest[i];
      f.ranges.push_back({g.start, g.end});
      f.evidence.push_back({fmt::format("gap at {}", format_duration(g.start)),
                            fmt::format("{}: {}{}{}", format_duration(g.end - g.start), name_of(g.cause),
                                        g.detail.empty() ? "" : ", ", g.detail)});
    }
    f.suggestion = suggestion(GapCause(dominant), groups);
    if (slow_host_explains(speed, opt, GapCause(dominant), groups)) {
      f.evidence.push_back({"host speed", fmt::format("bookkeeping ops {:.1f}x a typical profiled run's time ({} "
                                                      "calls): {}",
                                                      speed.slowdown, format_count(speed.calls), speed.detail)});
      f.suggestion = slow_host_suggestion(speed, f.suggestion);
    }
    out.push_back(std::move(f));
  }
}

}  // namespace loupe::prof::analysis
