// The kernels the runtime generates for the programs of its tests (the MLP
// training step, attention, reductions...), lowered without running them:
// traced and compiled for the CPU device, whose preparation does nothing,
// so that tests can look at every KernelSpec on a machine without a GPU.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compile/compiler.h"
#include "loupe/rt/runtime.h"
#include "mlp.h"
#include "trace/trace_context.h"

namespace loupe::test {

namespace rt = loupe::rt;
using rt::Array;
using V = std::vector<Array>;

struct ArgType {
  rt::Shape shape;
  rt::Dtype dtype = rt::f32;
};

inline std::shared_ptr<rt::compile::Executable> lower_function(const std::string& name,
                                                               const std::function<V(const V&)>& f,
                                                               const std::vector<ArgType>& args, bool fuse = true) {
  rt::Device dev = rt::cpu(0);
  auto tr = rt::detail::new_trace(dev);
  V params;
  for (const ArgType& a : args) params.push_back(rt::detail::add_parameter(tr, a.shape, a.dtype, dev));
  {
    rt::detail::TraceScope scope(tr);
    V outs = f(params);
    for (const Array& o : outs)
      tr->graph.outputs.push_back(rt::detail::node_in(tr, o, std::source_location::current()));
  }
  rt::JitOptions options;
  options.fuse = fuse;
  return rt::compile::compile_graph(std::move(tr->graph), name, options, dev).exe;
}

struct Program {
  std::string name;
  std::shared_ptr<rt::compile::Executable> exe;
};

// The MLP training step of the benchmark (784-1024-1024-10, AdamW).
inline Program mlp_step(int64_t batch = 256) {
  using namespace loupe::samples;
  const std::vector<int64_t> sizes = {784, 1024, 1024, 10};
  std::vector<ArgType> args;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    args.push_back({{sizes[i], sizes[i + 1]}});
    args.push_back({{sizes[i + 1]}});
  }
  size_t n = args.size();
  for (size_t i = 0; i < 2 * n; ++i) args.push_back(args[i % n]);  // m, v
  args.push_back({{}});                                            // step
  args.push_back({{batch, 784}});
  args.push_back({{batch}, rt::i32});
  auto f = [n](const V& v) {
    TrainState s;
    s.params.assign(v.begin(), v.begin() + long(n));
    s.opt.m.assign(v.begin() + long(n), v.begin() + long(2 * n));
    s.opt.v.assign(v.begin() + long(2 * n), v.begin() + long(3 * n));
    s.opt.step = v[3 * n];
    auto [next, loss] = train_step(s, v[3 * n + 1], v[3 * n + 2]);
    V out = next.params;
    out.insert(out.end(), next.opt.m.begin(), next.opt.m.end());
    out.insert(out.end(), next.opt.v.begin(), next.opt.v.end());
    out.push_back(next.opt.step);
    out.push_back(loss);
    return out;
  };
  return {"mlp_step", lower_function("mlp_step", f, args)};
}

// Attention forward and backward (fused or naive), causal or not.
inline Program attention_grad(rt::AttentionImpl impl, bool causal, rt::Dtype dtype = rt::f32) {
  auto f = [=](const V& v) {
    auto loss = [=](V qkv) { return rt::sum(rt::attention(qkv[0], qkv[1], qkv[2], causal, impl) * qkv[3]); };
    auto [l, g] = rt::value_and_grad(loss)(V{v[0], v[1], v[2], v[3]});
    return V{l, g[0], g[1], g[2]};
  };
  std::vector<ArgType> args = {
      {{2, 4, 96, 64}, dtype}, {{2, 4, 128, 64}, dtype}, {{2, 4, 128, 32}, dtype}, {{2, 4, 96, 32}, dtype}};
  return {"attention", lower_function("attention", f, args)};
}

// Reductions of every kind, over inner, outer and all axes, on floats and
// integers, with an elementwise producer fused in.
inline Program reductions() {
  auto f = [](const V& v) {
    Array x = v[0], i = v[1];
    return V{rt::sum(rt::exp(x), {1}), rt::max(x * 2.0, {0}), rt::min(x, {0, 1}),      rt::mean(x, {0}),
             rt::argmax(x, 1),         rt::argmax(x, 0),      rt::sum(i * i, {1}),     rt::max(i, {0}),
             rt::softmax(x),           rt::log_softmax(x),    rt::sum(rt::sum(x, {1}))};
  };
  return {"reductions", lower_function("reductions", f, {{{64, 300}}, {{64, 300}, rt::i32}})};
}

// A column reduction with enough outputs to get a thread each.
inline Program column_sum() {
  auto f = [](const V& v) { return V{rt::sum(v[0] * v[0], {0})}; };
  return {"column_sum", lower_function("column_sum", f, {{{8, 40000}}})};
}

// Layout kernels, random numbers, casts and 16-bit floats.
inline Program odds_and_ends() {
  auto f = [](const V& v) {
    Array table = v[0], idx = v[1], x = v[2];
    auto loss = [&](V t) { return rt::sum(rt::take(t[0], idx) * 3.0); };
    auto [l, g] = rt::value_and_grad(loss)(V{table});
    Array cat = rt::concat({x, x * 2.0, rt::full({16, 3}, 0.0, rt::f32, rt::cpu())}, 1);
    auto sl = [&](V t) { return rt::sum(rt::slice(t[0], {1, 0}, {15, 8}, {2, 3})); };
    auto [l2, g2] = rt::value_and_grad(sl)(V{x});
    Array h = rt::astype(x, rt::f16) * rt::astype(x, rt::f16);
    Array b = rt::astype(rt::gelu(x), rt::bf16) + rt::astype(rt::sigmoid(x), rt::bf16);
    Array r = rt::random::normal(rt::random::key(3, rt::cpu()), {16, 8}) +
              rt::random::uniform(rt::random::key(4, rt::cpu()), {16, 8});
    Array cmp = rt::where(x > 0.5, rt::tanh(x), rt::sqrt(rt::abs(x)) - rt::rsqrt(x * x + 1.0));
    Array ints =
        rt::astype(rt::maximum(rt::astype(x * 10.0, rt::i64), rt::full({16, 8}, 2, rt::i64, rt::cpu())), rt::i32);
    Array hot = rt::one_hot(idx, 50);
    Array pw = rt::power(rt::abs(x) + 1.0, x);
    return V{l, g[0], cat, g2[0], h, b, r, cmp, ints, hot, pw, rt::cross_entropy(x, idx)};
  };
  return {"odds_and_ends", lower_function("odds_and_ends", f, {{{50, 8}}, {{16}, rt::i32}, {{16, 8}}})};
}

}  // namespace loupe::test
