#include "autodiff/vjp_rules.h"

#include <fmt/format.h>

#include "trace/op_helpers.h"

namespace loupe::rt::autodiff {

using ir::Op;

namespace {

Array swap_last(const Array& x, const std::source_location& loc) {
  std::vector<int> perm;
  for (int d = 0; d < x.ndim() - 2; ++d) perm.push_back(d);
  perm.push_back(x.ndim() - 1);
  perm.push_back(x.ndim() - 2);
  return transpose(x, perm, loc);
}

// g reshaped to the keepdims shape of a reduction, broadcast back to x.
Array expand_reduced(const Array& g, const ir::Node& n, const Shape& x_shape, const std::source_location& loc) {
  Shape keep = x_shape;
  for (int64_t a : n.attrs.axes) keep[size_t(a)] = 1;
  return broadcast_to(reshape(g, keep, loc), x_shape, loc);
}

Array zero_like(const Array& x) { return detail::splat(x.shape(), 0, x.dtype(), x.device()); }

[[noreturn]] void no_rule(const ir::Node& n) {
  throw RuntimeError(fmt::format("internal error: op {} has no gradient rule", int(n.op)));
}

Array gelu_grad(const Array& x, const Array& g, const std::source_location& loc) {
  const double c = 0.7978845608028654, a = 0.044715;
  Array xx = multiply(x, x, loc);
  Array u = multiply(add(x, multiply(multiply(xx, x, loc), a, loc), loc), c, loc);
  Array t = tanh(u, loc);
  Array du = multiply(add(multiply(xx, 3 * a, loc), 1.0, loc), c, loc);
  Array d = add(multiply(add(t, 1.0, loc), 0.5, loc),
                multiply(multiply(multiply(x, 0.5, loc), subtract(1.0, multiply(t, t, loc), loc), loc), du, loc), loc);
  return multiply(g, d, loc);
}

std::vector<Array> vjp_unary(const ir::Node& n, const std::vector<Array>& x, const Array& y, const Array& g) {
  const std::source_location& loc = n.loc;
  switch (n.op) {
    LOUPE_OPS_BUT_UNARY(LOUPE_OP_CASE)
    break;  // another group
    case Op::logical_not:
    case Op::stop_gradient: return std::vector<Array>(x.size());  // no gradient flows
    case Op::neg: return {neg(g, loc)};
    case Op::exp: return {multiply(g, y, loc)};
    case Op::log: return {divide(g, x[0], loc)};
    case Op::tanh: return {multiply(g, subtract(1.0, multiply(y, y, loc), loc), loc)};
    case Op::sqrt: return {divide(multiply(g, 0.5, loc), y, loc)};
    case Op::rsqrt: return {multiply(g, multiply(multiply(y, multiply(y, y, loc), loc), -0.5, loc), loc)};
    case Op::relu: return {where(greater(x[0], 0.0, loc), g, 0.0, loc)};
    case Op::gelu: return {gelu_grad(x[0], g, loc)};
    case Op::sigmoid: return {multiply(g, multiply(y, subtract(1.0, y, loc), loc), loc)};
    case Op::abs: {
      Array sign = where(greater(x[0], 0.0, loc), 1.0, where(less(x[0], 0.0, loc), -1.0, 0.0, loc), loc);
      return {multiply(g, astype(sign, g.dtype(), loc), loc)};
    }
    case Op::cast:
      if (is_floating(x[0].dtype())) return {astype(g, x[0].dtype(), loc)};
      return {Array()};
  }
  no_rule(n);
}

std::vector<Array> vjp_arithmetic(const ir::Node& n, const std::vector<Array>& x, const Array& y, const Array& g) {
  const std::source_location& loc = n.loc;
  switch (n.op) {
    LOUPE_OPS_BUT_ARITHMETIC(LOUPE_OP_CASE)
    break;  // another group
    case Op::add: return {g, g};
    case Op::sub: return {g, neg(g, loc)};
    case Op::mul: return {multiply(g, x[1], loc), multiply(g, x[0], loc)};
    case Op::div: return {divide(g, x[1], loc), neg(divide(multiply(g, y, loc), x[1], loc), loc)};
    case Op::pow: {
      Array da = multiply(g, multiply(x[1], power(x[0], subtract(x[1], 1.0, loc), loc), loc), loc);
      Array positive = greater(x[0], 0.0, loc);
      Array safe = where(positive, x[0], 1.0, loc);
      Array db = where(positive, multiply(g, multiply(y, log(safe, loc), loc), loc), 0.0, loc);
      return {da, db};
    }
    case Op::maximum:
    case Op::minimum: {
      Array first = n.op == Op::maximum ? greater_equal(x[0], x[1], loc) : less_equal(x[0], x[1], loc);
      return {where(first, g, 0.0, loc), where(first, 0.0, g, loc)};
    }
  }
  no_rule(n);
}

std::vector<Array> vjp_reduction(const ir::Node& n, const std::vector<Array>& x, const Array& y, const Array& g) {
  const std::source_location& loc = n.loc;
  switch (n.op) {
    LOUPE_OPS_BUT_REDUCTION(LOUPE_OP_CASE)
    break;                                                 // another group
    case Op::argmax: return std::vector<Array>(x.size());  // no gradient flows
    case Op::reduce_sum: return {expand_reduced(g, n, x[0].shape(), loc)};
    case Op::reduce_max:
    case Op::reduce_min: {
      // Ties share the gradient equally.
      Array hit = equal(x[0], expand_reduced(y, n, x[0].shape(), loc), loc);
      Array hits = astype(hit, g.dtype(), loc);
      std::vector<int> axes(n.attrs.axes.begin(), n.attrs.axes.end());
      Array count = sum(hits, axes, true, loc);
      Array share = divide(expand_reduced(g, n, x[0].shape(), loc), broadcast_to(count, x[0].shape(), loc), loc);
      return {multiply(share, hits, loc)};
    }
  }
  no_rule(n);
}

std::vector<Array> vjp_view(const ir::Node& n, const std::vector<Array>& x, const Array& g) {
  const std::source_location& loc = n.loc;
  switch (n.op) {
    LOUPE_OPS_BUT_VIEW(LOUPE_OP_CASE)
    break;  // another group
    case Op::reshape: return {reshape(g, x[0].shape(), loc)};
    case Op::transpose: {
      std::vector<int> inverse(n.attrs.axes.size());
      for (size_t d = 0; d < n.attrs.axes.size(); ++d) inverse[size_t(n.attrs.axes[d])] = int(d);
      return {transpose(g, inverse, loc)};
    }
    case Op::broadcast_to: return {detail::sum_to(g, x[0].shape(), loc)};
    case Op::slice: {
      ir::Attrs a;
      a.shape = x[0].shape();
      a.starts = n.attrs.starts;
      a.steps = n.attrs.steps;
      return {detail::apply(Op::pad, {g}, std::move(a), "slice (gradient)", loc)};
    }
  }
  no_rule(n);
}

std::vector<Array> pad_grad(const ir::Node& n, const std::vector<Array>& x, const Array& g) {
  const std::source_location& loc = n.loc;
  std::vector<int64_t> stops;
  for (size_t d = 0; d < n.attrs.starts.size(); ++d)
    stops.push_back(n.attrs.starts[d] + (x[0].shape()[d] - 1) * n.attrs.steps[d] + 1);
  if (x[0].size() == 0) return {zero_like(x[0])};
  return {slice(g, n.attrs.starts, stops, n.attrs.steps, loc)};
}

std::vector<Array> concat_grad(const ir::Node& n, const std::vector<Array>& x, const Array& g) {
  std::vector<Array> out;
  int64_t at = 0;
  size_t axis = size_t(n.attrs.axis);
  for (const Array& xi : x) {
    std::vector<int64_t> starts(size_t(xi.ndim()), 0), stops(xi.shape().begin(), xi.shape().end());
    starts[axis] = at;
    stops[axis] = at + xi.shape()[axis];
    at = stops[axis];
    out.push_back(slice(g, starts, stops, {}, n.loc));
  }
  return out;
}

std::vector<Array> matmul_grad(const ir::Node& n, const std::vector<Array>& x, const Array& g) {
  const std::source_location& loc = n.loc;
  const Array& a = x[0];
  const Array& b = x[1];
  Array op_a = n.attrs.transpose_a ? swap_last(a, loc) : a;
  Array op_b = n.attrs.transpose_b ? swap_last(b, loc) : b;
  Array d_opa = matmul(g, swap_last(op_b, loc), loc);
  Array d_opb = matmul(swap_last(op_a, loc), g, loc);
  Array da = n.attrs.transpose_a ? swap_last(d_opa, loc) : d_opa;
  Array db = n.attrs.transpose_b ? swap_last(d_opb, loc) : d_opb;
  return {detail::sum_to(da, a.shape(), loc), detail::sum_to(db, b.shape(), loc)};
}

std::vector<Array> attention_grad(const ir::Node& n, const std::vector<Array>& x, const Array& y, const Array& g) {
  const std::source_location& loc = n.loc;
  ir::Attrs a = n.attrs;
  Array packed = detail::apply(Op::attention_bwd, {x[0], x[1], x[2], y, g}, std::move(a), "attention (gradient)", loc);
  std::vector<Array> out;
  int64_t at = 0;
  for (int i = 0; i < 3; ++i) {
    int64_t size = x[size_t(i)].size();
    out.push_back(reshape(slice(packed, {at}, {at + size}, {}, loc), x[size_t(i)].shape(), loc));
    at += size;
  }
  return out;
}

std::vector<Array> vjp_opaque(const ir::Node& n, const std::vector<Array>& x, const Array& y, const Array& g) {
  const std::source_location& loc = n.loc;
  switch (n.op) {
    LOUPE_OPS_BUT_OPAQUE(LOUPE_OP_CASE)
    break;  // another group
    case Op::pad: return pad_grad(n, x, g);
    case Op::concat: return concat_grad(n, x, g);
    case Op::matmul: return matmul_grad(n, x, g);
    case Op::gather: {
      ir::Attrs a;
      a.shape = x[0].shape();
      return {detail::apply(Op::scatter_add, {x[1], g}, std::move(a), "take (gradient)", loc), Array()};
    }
    case Op::scatter_add: return {Array(), take(g, x[0], loc)};
    case Op::attention: return attention_grad(n, x, y, g);
    case Op::attention_bwd:
      throw RuntimeError(
          fmt::format("attention at {}: the fused attention's gradient cannot be differentiated again; "
                      "use AttentionImpl::naive for higher-order gradients",
                      ir::format_loc(loc)));
  }
  no_rule(n);
}

}  // namespace

std::vector<Array> vjp(const ir::Node& n, const std::vector<Array>& x, const Array& y, const Array& g) {
  switch (n.op) {
    // Sources, comparisons, logic, random numbers: no gradient flows.
    LOUPE_SOURCE_OPS(LOUPE_OP_CASE)
    LOUPE_GENERATOR_OPS(LOUPE_OP_CASE)
    LOUPE_COMPARISON_OPS(LOUPE_OP_CASE)
    LOUPE_LOGICAL_OPS(LOUPE_OP_CASE)
    return std::vector<Array>(x.size());
    LOUPE_UNARY_OPS(LOUPE_OP_CASE) return vjp_unary(n, x, y, g);
    LOUPE_ARITHMETIC_OPS(LOUPE_OP_CASE) return vjp_arithmetic(n, x, y, g);
    LOUPE_REDUCTION_OPS(LOUPE_OP_CASE) return vjp_reduction(n, x, y, g);
    LOUPE_VIEW_OPS(LOUPE_OP_CASE) return vjp_view(n, x, g);
    LOUPE_OPAQUE_OPS(LOUPE_OP_CASE) return vjp_opaque(n, x, y, g);
    case Op::where: return {Array(), where(x[0], g, 0.0, n.loc), where(x[0], 0.0, g, n.loc)};
  }
  no_rule(n);
}

}  // namespace loupe::rt::autodiff
