// value_and_grad: trace the function into a graph, replay the graph on the
// real arguments (eagerly, or into an enclosing trace when inside jit),
// then walk it backwards applying each node's rule.
#include <fmt/format.h>

#include "autodiff/vjp_rules.h"
#include "exec/nvtx.h"
#include "loupe/rt/transforms.h"
#include "trace/op_helpers.h"
#include "trace/trace_context.h"

namespace loupe::rt::detail {

namespace {

void check_primals(const std::vector<Array>& primals, const std::source_location& loc) {
  for (const Array& p : primals) {
    if (!p.valid()) throw RuntimeError(fmt::format("grad at {}: an argument is a null Array", ir::format_loc(loc)));
    if (!is_floating(p.dtype()))
      throw ShapeError(fmt::format("grad at {}: can only differentiate floating-point arguments, got {}",
                                   ir::format_loc(loc), type_str(p.dtype(), p.shape())));
  }
}

// Runs the function on `params` under `trace`: the node of its output.
ir::NodeId trace_output(const std::function<Array(const std::vector<Array>&)>& f,
                        const std::shared_ptr<TraceState>& trace, const std::vector<Array>& params,
                        const std::source_location& loc) {
  TraceScope scope(trace);
  Array out = f(params);
  if (!out.valid())
    throw RuntimeError(fmt::format("grad at {}: the function returned a null Array", ir::format_loc(loc)));
  if (!out.shape().empty() || !is_floating(out.dtype()))
    throw ShapeError(fmt::format("grad at {}: the function must return a floating-point scalar, got {}",
                                 ir::format_loc(loc), type_str(out.dtype(), out.shape())));
  return node_in(trace, out, loc);
}

// Per node: whether the output needs it, and whether it depends on a
// parameter.
struct Reach {
  std::vector<bool> needed, depends;
};

Reach reach(const ir::Graph& g, ir::NodeId out_id) {
  Reach r{std::vector<bool>(g.size(), false), std::vector<bool>(g.size(), false)};
  std::vector<bool>& needed = r.needed;
  std::vector<bool>& depends = r.depends;
  needed[size_t(out_id)] = true;
  for (ir::NodeId i = out_id; i >= 0; --i)
    if (needed[size_t(i)])
      for (ir::NodeId x : g[i].inputs) needed[size_t(x)] = true;
  for (ir::NodeId i = 0; i <= out_id; ++i) {
    if (!needed[size_t(i)]) continue;
    const ir::Node& n = g[i];
    if (n.op == ir::Op::parameter) depends[size_t(i)] = true;
    else if (is_floating(n.dtype))
      for (ir::NodeId x : n.inputs) depends[size_t(i)] = depends[size_t(i)] || depends[size_t(x)];
  }
  return r;
}

// The value of every node the output needs, computed from the real
// arguments.
std::vector<Array> replay(const ir::Graph& g, ir::NodeId out_id, const std::vector<bool>& needed,
                          const std::vector<Array>& primals, Device device) {
  std::vector<Array> value(g.size());
  for (ir::NodeId i = 0; i <= out_id; ++i) {
    if (!needed[size_t(i)]) continue;
    const ir::Node& n = g[i];
    if (n.op == ir::Op::parameter) {
      value[size_t(i)] = primals[size_t(n.param)];
    } else if (n.op == ir::Op::constant) {
      value[size_t(i)] = n.constant;
    } else if (n.op == ir::Op::full && n.inputs.empty()) {
      value[size_t(i)] = splat(n.shape, n.attrs.value, n.dtype, device);
    } else {
      std::vector<Array> in;
      for (ir::NodeId x : n.inputs) in.push_back(value[size_t(x)]);
      value[size_t(i)] = apply(n.op, in, n.attrs, ir::op_name(n.op), n.loc, device);
    }
  }
  return value;
}

// The cotangent of every node that depends on a parameter, from the
// output's (1) back.
std::vector<Array> backward(const ir::Graph& g, ir::NodeId out_id, const std::vector<bool>& depends,
                            const std::vector<Array>& value, Device device) {
  std::vector<Array> ct(g.size());
  ct[size_t(out_id)] = splat({}, 1.0, g[out_id].dtype, device);
  for (ir::NodeId i = out_id; i >= 0; --i) {
    if (!ct[size_t(i)].valid() || !depends[size_t(i)]) continue;
    const ir::Node& n = g[i];
    if (n.op == ir::Op::parameter) continue;
    std::vector<Array> in;
    for (ir::NodeId x : n.inputs) in.push_back(value[size_t(x)]);
    std::vector<Array> d = autodiff::vjp(n, in, value[size_t(i)], ct[size_t(i)]);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      ir::NodeId x = n.inputs[k];
      if (!d[k].valid() || !depends[size_t(x)]) continue;
      ct[size_t(x)] = ct[size_t(x)].valid() ? add(ct[size_t(x)], d[k], n.loc) : d[k];
    }
  }
  return ct;
}

// The parameters' cotangents; zeros for those the output does not depend on.
std::vector<Array> gradients(const ir::Graph& g, const std::vector<Array>& primals, const std::vector<Array>& ct) {
  std::vector<Array> grads;
  for (size_t p = 0; p < primals.size(); ++p) {
    const Array& c = ct[size_t(g.params[p])];
    grads.push_back(c.valid() ? c : splat(primals[p].shape(), 0, primals[p].dtype(), primals[p].device()));
  }
  return grads;
}

}  // namespace

std::pair<Array, std::vector<Array>> value_and_grad_flat(const std::function<Array(const std::vector<Array>&)>& f,
                                                         const std::vector<Array>& primals,
                                                         const std::source_location& loc) {
  Device device = primals.empty() ? default_device() : primals[0].device();
  check_primals(primals, loc);

  // 1. The function as a graph over abstract parameters.
  auto trace = new_trace(device);
  std::vector<Array> params;
  for (const Array& p : primals) params.push_back(add_parameter(trace, p.shape(), p.dtype(), p.device()));
  ir::NodeId out_id = trace_output(f, trace, params, loc);
  const ir::Graph& g = trace->graph;

  // 2. Nodes the output needs, and those that depend on a parameter.
  Reach r = reach(g, out_id);
  // 3. Replay forward on the real arguments.
  std::vector<Array> value = replay(g, out_id, r.needed, primals, device);
  // 4. Backward.
  std::vector<Array> ct = backward(g, out_id, r.depends, value, device);
  std::vector<Array> grads = gradients(g, primals, ct);
  return {value[size_t(out_id)], grads};
}

}  // namespace loupe::rt::detail
