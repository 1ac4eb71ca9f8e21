// jit: trace a function once per input signature, compile it into one
// executable, cache it, and run it.
//
//   auto step = rt::jit("train_step", [](std::vector<Array> params, Array x, Array y) { ... },
//                       {.arg_names = {"params", "x", "y"}});
//   auto [params2, loss] = step(params, x, y);   // traces and compiles on the first call
//
// The signature of a call is the dtype, shape and device of every array
// leaf of the arguments plus the value of every static leaf (bool, number,
// string). A call with a signature seen before runs the cached executable;
// a new one traces, optimises (dead code, common subexpressions, constant
// folding, fusion of elementwise chains and the reductions consuming them)
// and compiles again. Each call is recorded as a compile event: a hit, or a
// miss with its reason against the closest earlier signature ("arg 1 `x`:
// now f32[31,128], before f32[32,128]", "static arg `training`: now false,
// before true", "new function object at the same call site", "first
// compile") and the optimised IR.
#pragma once

#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <tuple>
#include <vector>

#include "loupe/rt/function_traits.h"
#include "loupe/rt/tree.h"

namespace loupe::rt {

struct JitOptions {
  // Names of the function's parameters, for miss reasons ("arg 1 `x`").
  std::vector<std::string> arg_names;
  // The optimisation passes; off only to compare against them in tests.
  bool optimize = true;  // dead code, common subexpressions, constant folding
  bool fuse = true;      // one kernel per elementwise chain
};

struct JitStats {
  uint64_t hits = 0, misses = 0, aot = 0;
  size_t cache_entries = 0;
  std::string last_reason;  // the latest miss's reason
  std::string last_ir;      // the latest compile's optimised IR
  uint32_t last_kernels = 0, last_nodes = 0;
  // The latest compile's phases, in nanoseconds.
  int64_t last_trace_ns = 0, last_optimize_ns = 0, last_codegen_ns = 0;
};

namespace detail {

class JitCore;

struct Traced {
  std::vector<Array> outputs;
  std::shared_ptr<void> tmpl;  // the result tree with null arrays
};
using TraceFn = std::function<Traced(const std::vector<Array>& tracers)>;
using PathsFn = std::function<tree::Flat()>;

std::shared_ptr<JitCore> jit_create(std::string name, JitOptions options, const std::source_location& created);
// Runs (compiling on a miss) and returns the flat outputs and the template.
Traced jit_call(JitCore& core, const tree::Flat& args, const TraceFn& trace, const PathsFn& paths,
                const std::source_location& loc);
void jit_compile_for(JitCore& core, const tree::Flat& args, const TraceFn& trace, const PathsFn& paths,
                     const std::source_location& loc);
JitStats jit_stats(const JitCore& core);
const std::string& jit_name(const JitCore& core);

}  // namespace detail

template <typename Sig>
class Jitted;

template <typename R, typename... P>
class Jitted<R(P...)> {
 public:
  Jitted(std::function<R(P...)> fn, std::shared_ptr<detail::JitCore> core)
      : fn_(std::move(fn)), core_(std::move(core)) {}

  R operator()(const P&... args, std::source_location loc = std::source_location::current()) const {
    tree::Flat flat = flatten(false, args...);
    detail::Traced out = detail::jit_call(*core_, flat, tracer(args...), paths(args...), loc);
    size_t next = 0;
    return tree::rebuild(*static_cast<const R*>(out.tmpl.get()), out.outputs, next);
  }

  // Compiles for these arguments' signature before any call (arrays may be
  // abstract: rt::spec(shape, dtype)). Recorded as an ahead-of-time compile.
  void compile_for(const P&... args, std::source_location loc = std::source_location::current()) const {
    detail::jit_compile_for(*core_, flatten(false, args...), tracer(args...), paths(args...), loc);
  }

  JitStats stats() const { return detail::jit_stats(*core_); }
  const std::string& name() const { return detail::jit_name(*core_); }

 private:
  static tree::Flat flatten(bool want_paths, const P&... args) {
    tree::Flat flat;
    flat.want_paths = want_paths;
    auto one = [&](const auto& a) {
      tree::flatten(a, flat);
      ++flat.arg;
    };
    (one(args), ...);
    return flat;
  }
  detail::PathsFn paths(const P&... args) const {
    return [&args...] { return flatten(true, args...); };
  }
  detail::TraceFn tracer(const P&... args) const {
    return [this, &args...](const std::vector<Array>& tracers) {
      size_t next = 0;
      std::tuple<P...> traced{tree::rebuild(args, tracers, next)...};
      R result = std::apply(fn_, traced);
      tree::Flat out;
      tree::flatten(result, out);
      std::vector<Array> nulls(out.arrays.size());
      size_t n = 0;
      auto tmpl = std::make_shared<R>(tree::rebuild(result, nulls, n));
      return detail::Traced{std::move(out.arrays), std::move(tmpl)};
    };
  }

  std::function<R(P...)> fn_;
  std::shared_ptr<detail::JitCore> core_;
};

// A jitted version of `fn`. The jit object owns its compile cache: create
// it once and reuse it (creating one per iteration at the same line
// recompiles every time, and the trace says so).
template <typename F>
auto jit(std::string name, F fn, JitOptions options = {}, std::source_location loc = std::source_location::current()) {
  using Sig = detail::SignatureOf<F>;
  return Jitted<Sig>(std::function<Sig>(std::move(fn)), detail::jit_create(std::move(name), std::move(options), loc));
}

}  // namespace loupe::rt
