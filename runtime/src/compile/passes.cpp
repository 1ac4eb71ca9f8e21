#include "compile/passes.h"

#include <cmath>
#include <unordered_map>

#include "backend/cpu/fast_math.h"
#include "compile/ir_names.h"

namespace loupe::rt::compile {

namespace {

// Copies node `n` into `out` with inputs remapped.
NodeId copy_node(Graph& out, const Node& n, const std::vector<NodeId>& remap) {
  Node c = n;
  for (NodeId& x : c.inputs) x = remap[size_t(x)];
  NodeId id = out.add(std::move(c));
  if (n.op == Op::parameter) out.params.push_back(id);
  return id;
}

void remap_outputs(const Graph& g, Graph& out, const std::vector<NodeId>& remap) {
  for (NodeId o : g.outputs) out.outputs.push_back(remap[size_t(o)]);
}

}  // namespace

Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live(g.size(), false);
  for (NodeId o : g.outputs) live[size_t(o)] = true;
  for (NodeId p : g.params) live[size_t(p)] = true;
  for (NodeId i = NodeId(g.size()) - 1; i >= 0; --i)
    if (live[size_t(i)])
      for (NodeId x : g[i].inputs) live[size_t(x)] = true;
  Graph out;
  std::vector<NodeId> remap(g.size(), -1);
  for (NodeId i = 0; i < NodeId(g.size()); ++i)
    if (live[size_t(i)]) remap[size_t(i)] = copy_node(out, g[i], remap);
  remap_outputs(g, out, remap);
  return out;
}

Graph eliminate_common_subexpressions(const Graph& g) {
  struct Key {
    const Node* n;
    std::vector<NodeId> inputs;
  };
  auto hash = [](const Node& n, const std::vector<NodeId>& inputs) {
    size_t h = size_t(n.op) * 0x9e3779b97f4a7c15ull ^ ir::hash_attrs(n.attrs) ^ (size_t(n.dtype) << 8);
    for (NodeId x : inputs) h = h * 1000003u ^ size_t(x);
    for (int64_t d : n.shape) h = h * 31u ^ size_t(d);
    if (n.op == Op::constant) h ^= std::hash<const void*>{}(n.constant.data().get());
    return h;
  };
  std::unordered_multimap<size_t, NodeId> seen;
  Graph out;
  std::vector<NodeId> remap(g.size(), -1);
  for (NodeId i = 0; i < NodeId(g.size()); ++i) {
    const Node& n = g[i];
    if (n.op == Op::parameter) {
      remap[size_t(i)] = copy_node(out, n, remap);
      continue;
    }
    std::vector<NodeId> inputs;
    for (NodeId x : n.inputs) inputs.push_back(remap[size_t(x)]);
    size_t h = hash(n, inputs);
    NodeId found = -1;
    auto [b, e] = seen.equal_range(h);
    for (auto it = b; it != e && found < 0; ++it) {
      const Node& m = out[it->second];
      if (m.op == n.op && m.inputs == inputs && m.attrs == n.attrs && m.dtype == n.dtype && m.shape == n.shape &&
          (n.op != Op::constant || m.constant.same(n.constant)))
        found = it->second;
    }
    if (found >= 0) {
      remap[size_t(i)] = found;
      continue;
    }
    NodeId id = copy_node(out, n, remap);
    seen.emplace(h, id);
    remap[size_t(i)] = id;
  }
  remap_outputs(g, out, remap);
  return out;
}

namespace {

// A value as a `dtype` element would hold it.
double as_dtype(double v, Dtype d) {
  switch (d) {
    case Dtype::f32: return double(float(v));
    case Dtype::f16: return double(backend::cpu::half_to_float(backend::cpu::float_to_half(float(v))));
    case Dtype::bf16: return double(backend::cpu::bfloat_to_float(backend::cpu::float_to_bfloat(float(v))));
    case Dtype::i32: return std::isfinite(v) ? double(int32_t(int64_t(v))) : 0.0;
    case Dtype::i64: return std::isfinite(v) ? double(int64_t(v)) : 0.0;
    case Dtype::boolean: return v != 0 ? 1.0 : 0.0;
  }
  return v;
}

// Evaluates an elementwise op on constants; false when it cannot.
bool evaluate(Op op, const std::vector<double>& x, Dtype in, double& out) {
  const bool f = is_floating(in);
  double a = x.empty() ? 0 : x[0], b = x.size() > 1 ? x[1] : 0;
  switch (op) {
    LOUPE_SOURCE_OPS(LOUPE_OP_CASE)
    LOUPE_REDUCTION_OPS(LOUPE_OP_CASE)
    LOUPE_VIEW_OPS(LOUPE_OP_CASE)
    LOUPE_OPAQUE_OPS(LOUPE_OP_CASE)
    LOUPE_GENERATOR_OPS(LOUPE_OP_CASE)
    case Op::gelu:
    case Op::stop_gradient: return false;
    case Op::neg: out = -a; return true;
    case Op::exp: out = std::exp(a); return true;
    case Op::log: out = std::log(a); return true;
    case Op::tanh: out = std::tanh(a); return true;
    case Op::sqrt: out = std::sqrt(a); return true;
    case Op::rsqrt: out = 1 / std::sqrt(a); return true;
    case Op::relu: out = a > 0 ? a : 0; return true;
    case Op::sigmoid: out = 1 / (1 + std::exp(-a)); return true;
    case Op::abs: out = std::fabs(a); return true;
    case Op::logical_not: out = a == 0; return true;
    case Op::cast: out = a; return true;
    case Op::add: out = a + b; return true;
    case Op::sub: out = a - b; return true;
    case Op::mul: out = a * b; return true;
    case Op::div:
      if (!f) {
        if (b == 0) return false;
        out = std::trunc(a / b);
        return true;
      }
      out = a / b;
      return true;
    case Op::pow: out = std::pow(a, b); return true;
    case Op::maximum: out = a > b ? a : b; return true;
    case Op::minimum: out = a < b ? a : b; return true;
    case Op::eq: out = a == b; return true;
    case Op::ne: out = a != b; return true;
    case Op::lt: out = a < b; return true;
    case Op::le: out = a <= b; return true;
    case Op::gt: out = a > b; return true;
    case Op::ge: out = a >= b; return true;
    case Op::logical_and: out = a != 0 && b != 0; return true;
    case Op::logical_or: out = a != 0 || b != 0; return true;
    case Op::where: out = a != 0 ? x[1] : x[2]; return true;
  }
  return false;  // not an Op
}

bool is_swap_last(const Node& t) {
  if (t.op != Op::transpose || t.attrs.axes.size() < 2) return false;
  size_t r = t.attrs.axes.size();
  for (size_t d = 0; d + 2 < r; ++d)
    if (t.attrs.axes[d] != int64_t(d)) return false;
  return t.attrs.axes[r - 2] == int64_t(r - 1) && t.attrs.axes[r - 1] == int64_t(r - 2);
}

bool is_full(const Graph& out, NodeId id) { return out[id].op == Op::full; }

// A `full` node of `like`'s type holding v.
NodeId make_full(Graph& out, const Node& like, double v) {
  Node f;
  f.op = Op::full;
  f.shape = like.shape;
  f.dtype = like.dtype;
  f.loc = like.loc;
  f.attrs.shape = like.shape;
  f.attrs.dtype = like.dtype;
  f.attrs.value = as_dtype(v, like.dtype);
  return out.add(std::move(f));
}

// Node n, whose inputs are `in` in `out`, as a constant: stop_gradient is
// its operand; views and casts of constants, and elementwise ops on
// constants, are constants. -1 when it is not one.
NodeId as_constant(Graph& out, const Node& n, const std::vector<NodeId>& in) {
  if (n.op == Op::stop_gradient) return in[0];
  // Views and casts of constants are constants.
  if ((ir::is_view(n.op) || n.op == Op::cast) && is_full(out, in[0])) return make_full(out, n, out[in[0]].attrs.value);
  // Elementwise ops on constants.
  if (ir::is_elementwise(n.op) && !in.empty() && !ir::is_random(n.op)) {
    bool all = true;
    std::vector<double> vals;
    for (NodeId x : in) {
      all = all && is_full(out, x);
      if (all) vals.push_back(out[x].attrs.value);
    }
    double v;
    if (all && evaluate(n.op, vals, out[in[0]].dtype, v)) return make_full(out, n, v);
  }
  return -1;
}

// x op e, and e op x for a commutative op, is x when e is a constant of
// the op's identity `e` and x already has the result's type.
NodeId without_identity(const Graph& out, const Node& n, const std::vector<NodeId>& in, double e, bool commutative) {
  auto same = [&](NodeId id) { return out[id].shape == n.shape && out[id].dtype == n.dtype; };
  auto full_is = [&](NodeId id, double v) { return is_full(out, id) && out[id].attrs.value == v; };
  if (full_is(in[1], e) && same(in[0])) return in[0];
  if (commutative && full_is(in[0], e) && same(in[1])) return in[1];
  return NodeId(-1);
}

// transpose(transpose(x)): x, or one transpose by the composed permutation.
NodeId compose_transposes(Graph& out, const Node& n, const std::vector<NodeId>& in) {
  if (out[in[0]].op != Op::transpose) return -1;
  // Compose the permutations.
  const Node& inner = out[in[0]];
  ir::Attrs a = n.attrs;
  bool identity = true;
  for (size_t d = 0; d < a.axes.size(); ++d) {
    a.axes[d] = inner.attrs.axes[size_t(n.attrs.axes[d])];
    identity &= a.axes[d] == int64_t(d);
  }
  if (identity) return inner.inputs[0];
  Node c = n;
  c.attrs = a;
  c.inputs = {inner.inputs[0]};
  return out.add(std::move(c));
}

// matmul(transpose(a), b) is one BLAS call with a transposed operand.
NodeId fold_transposed_operands(Graph& out, const Node& n, const std::vector<NodeId>& in) {
  Node c = n;
  c.inputs = in;
  bool changed = false;
  for (size_t k = 0; k < 2; ++k) {
    const Node& t = out[c.inputs[k]];
    if (!is_swap_last(t)) continue;
    c.inputs[k] = t.inputs[0];
    bool& flag = k == 0 ? c.attrs.transpose_a : c.attrs.transpose_b;
    flag = !flag;
    changed = true;
  }
  if (changed) return out.add(std::move(c));
  return -1;
}

// Node n, whose inputs are `in` in `out`, simplified: x*1, x+0, double
// negation, nested views, a matmul of transposes; -1 when it stays. A view
// of a view of the same kind may be redirected, through `in`, to the inner
// view's operand.
NodeId simplify(Graph& out, const Node& n, std::vector<NodeId>& in) {
  switch (n.op) {
    LOUPE_SOURCE_OPS(LOUPE_OP_CASE)
    LOUPE_REDUCTION_OPS(LOUPE_OP_CASE)
    LOUPE_GENERATOR_OPS(LOUPE_OP_CASE)
    LOUPE_COMPARISON_OPS(LOUPE_OP_CASE)
    LOUPE_LOGICAL_OPS(LOUPE_OP_CASE)
    case Op::exp:
    case Op::log:
    case Op::tanh:
    case Op::sqrt:
    case Op::rsqrt:
    case Op::relu:
    case Op::gelu:
    case Op::sigmoid:
    case Op::abs:
    case Op::logical_not:
    case Op::cast:
    case Op::stop_gradient:
    case Op::pow:
    case Op::maximum:
    case Op::minimum:
    case Op::where:
    case Op::slice:
    case Op::pad:
    case Op::concat:
    case Op::gather:
    case Op::scatter_add:
    case Op::attention:
    case Op::attention_bwd: return -1;
    case Op::add: return without_identity(out, n, in, 0, true);
    case Op::sub: return without_identity(out, n, in, 0, false);
    case Op::mul: return without_identity(out, n, in, 1, true);
    case Op::div: return without_identity(out, n, in, 1, false);
    case Op::neg: return out[in[0]].op == Op::neg ? out[in[0]].inputs[0] : -1;
    case Op::reshape:
      if (out[in[0]].op == Op::reshape) in[0] = out[in[0]].inputs[0];
      return out[in[0]].shape == n.shape ? in[0] : -1;
    case Op::transpose: return compose_transposes(out, n, in);
    case Op::broadcast_to:
      if (out[in[0]].op == Op::broadcast_to) in[0] = out[in[0]].inputs[0];
      return -1;
    case Op::matmul: return fold_transposed_operands(out, n, in);
  }
  return -1;
}

}  // namespace

Graph fold_constants(const Graph& g) {
  Graph out;
  std::vector<NodeId> remap(g.size(), -1);
  for (NodeId i = 0; i < NodeId(g.size()); ++i) {
    const Node& n = g[i];
    if (n.op == Op::parameter || n.op == Op::constant) {
      remap[size_t(i)] = copy_node(out, n, remap);
      continue;
    }
    std::vector<NodeId> in;
    for (NodeId x : n.inputs) in.push_back(remap[size_t(x)]);
    NodeId r = as_constant(out, n, in);
    if (r < 0) r = simplify(out, n, in);
    if (r < 0) {
      Node c = n;
      c.inputs = in;
      r = out.add(std::move(c));
    }
    remap[size_t(i)] = r;
  }
  remap_outputs(g, out, remap);
  return out;
}

}  // namespace loupe::rt::compile
