// The jit cache: per jitted function object, executables by signature.
// Every call is recorded as a compile event (a hit, a miss with its reason
// and what the compile cost, or an ahead-of-time compile).
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include "compile/compiler.h"
#include "compile/signature.h"
#include "exec/callsite_cache.h"
#include "exec/nvtx.h"
#include "loupe/rt/errors.h"
#include "loupe/rt/jit.h"
#include "trace/trace_context.h"

namespace loupe::rt::detail {

class JitCore {
 public:
  struct Entry {
    compile::Signature sig;
    const char* sig_text = "";
    std::shared_ptr<compile::Executable> exe;
    std::shared_ptr<void> tmpl;
    Device device;
  };

  std::string name;
  const char* fn_name = "";
  const char* span_name = "";
  JitOptions options;
  std::source_location created;
  uint64_t object_id = 0;

  mutable std::mutex mu;
  std::vector<std::unique_ptr<Entry>> entries;
  std::unordered_multimap<size_t, Entry*> index;
  JitStats stats;

  Entry* find(const compile::Signature& sig) {
    auto [b, e] = index.equal_range(sig.hash);
    for (auto it = b; it != e; ++it)
      if (it->second->sig == sig) return it->second;
    return nullptr;
  }
};

namespace {

std::atomic<uint64_t> g_object_ids{0};

// Jitted functions by (name, line that created them): a second object at
// the same place is a jit re-created in a loop.
struct Site {
  uint64_t last_object = 0;
  std::vector<compile::Signature> sigs;  // the most recent, bounded
};
struct Sites {
  std::mutex mu;
  std::map<std::tuple<std::string, std::string, uint32_t, uint32_t>, Site> map;
};
Sites& sites() {
  static Sites* s = new Sites;
  return *s;
}
auto site_key(const JitCore& c) {
  return std::make_tuple(c.name, std::string(c.created.file_name()), c.created.line(), c.created.column());
}

Device call_device(const JitCore& core, const tree::Flat& flat, const std::source_location& loc) {
  if (flat.arrays.empty()) return default_device();
  Device d = flat.arrays[0].device();
  for (size_t i = 1; i < flat.arrays.size(); ++i) {
    if (flat.arrays[i].device() == d) continue;
    throw RuntimeError(
        fmt::format("{} at {}: its array arguments are on different devices ({} and {}); move them "
                    "with to_device()",
                    core.name, ir::format_loc(loc), d.str(), flat.arrays[i].device().str()));
  }
  return d;
}

void check_args(const JitCore& core, const tree::Flat& flat, bool allow_abstract, const std::source_location& loc) {
  for (const Array& a : flat.arrays) {
    if (!a.valid())
      throw RuntimeError(fmt::format("{} at {}: an argument is a null Array", core.name, ir::format_loc(loc)));
    const ArrayData& d = *a.data();
    if (d.abstract && !allow_abstract)
      throw RuntimeError(fmt::format("{} at {}: an abstract array (rt::spec) can only be an argument of compile_for",
                                     core.name, ir::format_loc(loc)));
    if (d.is_tracer() && !d.trace->active) not_concrete(d, core.name, loc);
  }
}

// Why a compile: against this function's earlier signatures, or another
// object made at the same line.
std::string miss_reason(const JitCore& core, const compile::Signature& sig, const PathsFn& paths) {
  std::vector<const compile::Signature*> before;
  for (const auto& e : core.entries) before.push_back(&e->sig);
  if (!before.empty()) return compile::explain_miss(sig, before, paths(), core.options.arg_names);
  Sites& s = sites();
  std::lock_guard lock(s.mu);
  auto it = s.map.find(site_key(core));
  if (it == s.map.end() || it->second.last_object == core.object_id) return "first compile";
  std::string reason = "new function object at the same call site";
  std::vector<const compile::Signature*> prev;
  for (const auto& p : it->second.sigs) prev.push_back(&p);
  bool seen = false;
  for (const auto* p : prev) seen |= *p == sig;
  if (!seen) {
    std::string diff = compile::explain_miss(sig, prev, paths(), core.options.arg_names);
    if (!diff.empty()) reason += "; " + diff;
  }
  return reason;
}

// Runs the function on `params` under `tr`: its outputs become the graph's.
Traced trace_graph(const std::shared_ptr<TraceState>& tr, const std::vector<Array>& params, const TraceFn& trace,
                   const std::source_location& loc) {
  exec::Phase phase("trace", prof::SpanKind::compile);
  TraceScope scope(tr);
  Traced traced = trace(params);
  for (const Array& o : traced.outputs) tr->graph.outputs.push_back(node_in(tr, o, loc));
  return traced;
}

// LOUPE_DUMP_IR=1 prints what each compile produced, as XLA's dump flags do.
void dump_ir(const JitCore& core, const std::string& reason, const compile::Compiled& c) {
  static const bool dump = [] {
    const char* env = std::getenv("LOUPE_DUMP_IR");
    return env != nullptr && *env != 0 && *env != '0';
  }();
  if (dump) std::fprintf(stderr, "loupe: compiled %s (%s)\n%s\n", core.name.c_str(), reason.c_str(), c.ir.c_str());
}

// The cache entry of `sig`, found by its hash from now on.
JitCore::Entry* add_entry(JitCore& core, compile::Signature sig, const compile::Compiled& c, std::shared_ptr<void> tmpl,
                          Device device) {
  auto entry = std::make_unique<JitCore::Entry>();
  entry->sig = std::move(sig);
  entry->sig_text = prof::intern(entry->sig.text(core.options.arg_names));
  entry->exe = c.exe;
  entry->tmpl = std::move(tmpl);
  entry->device = device;
  JitCore::Entry* e = entry.get();
  core.index.emplace(e->sig.hash, e);
  core.entries.push_back(std::move(entry));
  return e;
}

// The function's stats after a compile: a miss, or one ahead of time.
void count_compile(JitCore& core, prof::CompileKind kind, const std::string& reason, const compile::Compiled& c,
                   int64_t trace_ns) {
  if (kind == prof::CompileKind::aot) ++core.stats.aot;
  else ++core.stats.misses;
  core.stats.cache_entries = core.entries.size();
  core.stats.last_reason = reason;
  core.stats.last_ir = c.ir;
  core.stats.last_kernels = c.kernels;
  core.stats.last_nodes = c.nodes;
  core.stats.last_trace_ns = trace_ns;
  core.stats.last_optimize_ns = c.optimize_ns;
  core.stats.last_codegen_ns = c.codegen_ns;
}

// The signatures this object compiled at its line, the most recent, for
// miss_reason() when another object is made there.
void remember_site(const JitCore& core, const compile::Signature& sig) {
  Sites& s = sites();
  std::lock_guard lock(s.mu);
  Site& site = s.map[site_key(core)];
  if (site.last_object != core.object_id) site.sigs.clear();
  site.last_object = core.object_id;
  site.sigs.push_back(sig);
  if (site.sigs.size() > 16) site.sigs.erase(site.sigs.begin());
}

// Traces, optimises and lowers the function for `flat`'s signature.
JitCore::Entry* compile_entry(JitCore& core, const tree::Flat& flat, compile::Signature sig, const TraceFn& trace,
                              const PathsFn& paths, const std::source_location& loc, prof::CompileKind kind,
                              prof::Ticks start) {
  Device device = call_device(core, flat, loc);
  std::string reason = miss_reason(core, sig, paths);

  // Trace.
  int64_t t0 = prof::monotonic_ns();
  auto tr = new_trace(device);
  std::vector<Array> params;
  for (const Array& a : flat.arrays) params.push_back(add_parameter(tr, a.shape(), a.dtype(), a.device()));
  Traced traced = trace_graph(tr, params, trace, loc);
  int64_t trace_ns = prof::monotonic_ns() - t0;

  compile::Compiled c = compile::compile_graph(std::move(tr->graph), core.name, core.options, device);
  dump_ir(core, reason, c);
  JitCore::Entry* e = add_entry(core, std::move(sig), c, std::move(traced.tmpl), device);
  count_compile(core, kind, reason, c, trace_ns);
  if (prof::capturing()) {
    prof::compile({.function = core.fn_name,
                   .signature = e->sig_text,
                   .kind = kind,
                   .reason = reason,
                   .start = start,
                   .end = prof::ticks_now(),
                   .trace_ns = trace_ns,
                   .optimize_ns = c.optimize_ns,
                   .codegen_ns = c.codegen_ns,
                   .nodes = c.nodes,
                   .kernels = c.kernels,
                   .ir = c.ir,
                   .callsite = exec::site_of(loc),
                   .function_object = core.object_id});
  }
  remember_site(core, e->sig);
  return e;
}

}  // namespace

std::shared_ptr<JitCore> jit_create(std::string name, JitOptions options, const std::source_location& created) {
  auto c = std::make_shared<JitCore>();
  c->fn_name = prof::intern(name);
  c->span_name = prof::intern("jit " + name);
  c->name = std::move(name);
  c->options = std::move(options);
  c->created = created;
  c->object_id = ++g_object_ids;
  return c;
}

Traced jit_call(JitCore& core, const tree::Flat& flat, const TraceFn& trace, const PathsFn& paths,
                const std::source_location& loc) {
  // Inside another trace (jit in jit, jit in grad), the function is inlined.
  if (current_trace() != nullptr) return trace(flat.arrays);
  check_args(core, flat, false, loc);
  exec::Phase phase(core.span_name);
  prof::Ticks start = prof::ticks_now();
  compile::Signature sig = compile::make_signature(flat);
  std::shared_ptr<compile::Executable> exe;
  std::shared_ptr<void> tmpl;
  Device device;
  {
    std::lock_guard lock(core.mu);
    JitCore::Entry* e = core.find(sig);
    if (e != nullptr) {
      ++core.stats.hits;
      if (prof::capturing()) {
        prof::compile({.function = core.fn_name,
                       .signature = e->sig_text,
                       .kind = prof::CompileKind::hit,
                       .start = start,
                       .end = prof::ticks_now(),
                       .nodes = e->exe->nodes,
                       .kernels = uint32_t(e->exe->steps.size()),
                       .callsite = exec::site_of(loc),
                       .function_object = core.object_id});
      }
    } else {
      e = compile_entry(core, flat, std::move(sig), trace, paths, loc, prof::CompileKind::miss, start);
    }
    exe = e->exe;
    tmpl = e->tmpl;
    device = e->device;
  }
  exec::Phase run_phase("execute");
  return {compile::run(*exe, flat.arrays, device), tmpl};
}

void jit_compile_for(JitCore& core, const tree::Flat& flat, const TraceFn& trace, const PathsFn& paths,
                     const std::source_location& loc) {
  check_args(core, flat, true, loc);
  exec::Phase phase(core.span_name);
  prof::Ticks start = prof::ticks_now();
  compile::Signature sig = compile::make_signature(flat);
  std::lock_guard lock(core.mu);
  if (core.find(sig) != nullptr) return;
  compile_entry(core, flat, std::move(sig), trace, paths, loc, prof::CompileKind::aot, start);
}

JitStats jit_stats(const JitCore& core) {
  std::lock_guard lock(core.mu);
  return core.stats;
}

const std::string& jit_name(const JitCore& core) { return core.name; }

}  // namespace loupe::rt::detail
