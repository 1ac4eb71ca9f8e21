// Linear algebra and the building blocks of networks. Most are composites
// of primitives, so they differentiate and fuse like any other code;
// matmul, take and the fused attention are primitives with kernels of
// their own.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "trace/op_helpers.h"

namespace loupe::rt {

using ir::Op;

Array matmul(const Array& a, const Array& b, Loc loc) {
  std::vector<ir::Type> types{detail::type_of(a), detail::type_of(b)};
  if (a.ndim() == 0 || b.ndim() == 0) ir::fail("matmul", types, "operands need at least one axis", loc);
  Array x = a.ndim() == 1 ? reshape(a, {1, a.dim(0)}, loc) : a;
  Array y = b.ndim() == 1 ? reshape(b, {b.dim(0), 1}, loc) : b;
  // Check with the user's operands, so that errors show their shapes.
  ir::infer(Op::matmul, {detail::type_of(x), detail::type_of(y)}, {}, "matmul", loc);
  Array r = detail::apply(Op::matmul, {x, y}, {}, "matmul", loc);
  if (b.ndim() == 1) r = squeeze(r, -1, loc);
  if (a.ndim() == 1) r = squeeze(r, b.ndim() == 1 ? -1 : -2, loc);
  return r;
}

Array softmax(const Array& x, int axis, Loc loc) {
  if (!is_floating(x.dtype())) ir::fail("softmax", {detail::type_of(x)}, "needs a floating-point operand", loc);
  int64_t ax = ir::normalize_axis(axis, x.shape().size(), "softmax", {detail::type_of(x)}, loc);
  Array m = stop_gradient(max(x, {int(ax)}, true, loc), loc);
  Array e = exp(subtract(x, m, loc), loc);
  return divide(e, sum(e, {int(ax)}, true, loc), loc);
}

Array log_softmax(const Array& x, int axis, Loc loc) {
  if (!is_floating(x.dtype())) ir::fail("log_softmax", {detail::type_of(x)}, "needs a floating-point operand", loc);
  int64_t ax = ir::normalize_axis(axis, x.shape().size(), "log_softmax", {detail::type_of(x)}, loc);
  Array m = stop_gradient(max(x, {int(ax)}, true, loc), loc);
  Array shifted = subtract(x, m, loc);
  return subtract(shifted, log(sum(exp(shifted, loc), {int(ax)}, true, loc), loc), loc);
}

Array layer_norm(const Array& x, const Array& gamma, const Array& beta, double eps, Loc loc) {
  std::vector<ir::Type> types{detail::type_of(x), detail::type_of(gamma), detail::type_of(beta)};
  if (x.ndim() == 0) ir::fail("layer_norm", types, "needs at least one axis", loc);
  Shape last{x.shape().back()};
  if (gamma.shape() != last || beta.shape() != last)
    ir::fail("layer_norm", types, fmt::format("gamma and beta must have shape {}", shape_str(last)), loc);
  if (!is_floating(x.dtype())) ir::fail("layer_norm", types, "needs a floating-point operand", loc);
  Array mu = mean(x, {-1}, true, loc);
  Array xc = subtract(x, mu, loc);
  Array var = mean(multiply(xc, xc, loc), {-1}, true, loc);
  Array y = multiply(xc, rsqrt(add(var, eps, loc), loc), loc);
  return add(multiply(y, gamma, loc), beta, loc);
}

Array take(const Array& table, const Array& indices, Loc loc) {
  return detail::apply(Op::gather, {table, indices}, {}, "take", loc);
}

Array one_hot(const Array& labels, int64_t classes, Dtype dtype, Loc loc) {
  if (!is_integer(labels.dtype())) ir::fail("one_hot", {detail::type_of(labels)}, "labels must be integers", loc);
  if (classes < 0) ir::fail("one_hot", {detail::type_of(labels)}, "the number of classes is negative", loc);
  Shape s = labels.shape();
  s.push_back(classes);
  ir::Attrs a;
  a.shape = s;
  a.dtype = labels.dtype();
  a.axis = int64_t(s.size() - 1);
  Array cls = detail::apply(Op::iota, {}, std::move(a), "one_hot", loc, labels.device());
  Array hot = equal(cls, broadcast_to(expand_dims(labels, -1, loc), s, loc), loc);
  return astype(hot, dtype, loc);
}

Array cross_entropy(const Array& logits, const Array& labels, Loc loc) {
  std::vector<ir::Type> types{detail::type_of(logits), detail::type_of(labels)};
  if (logits.ndim() != 2 || labels.ndim() != 1 || logits.dim(0) != labels.dim(0))
    ir::fail("cross_entropy", types, "needs logits [N, C] and labels [N]", loc);
  if (!is_integer(labels.dtype())) ir::fail("cross_entropy", types, "labels must be integers", loc);
  Array lp = log_softmax(logits, -1, loc);
  Array picked = sum(multiply(lp, one_hot(labels, logits.dim(1), logits.dtype(), loc), loc), {-1}, false, loc);
  return neg(mean(picked, {}, false, loc), loc);
}

Array attention(const Array& q, const Array& k, const Array& v, bool causal, AttentionImpl impl, double scale,
                Loc loc) {
  std::vector<ir::Type> types{detail::type_of(q), detail::type_of(k), detail::type_of(v)};
  ir::infer(Op::attention, types, {}, "attention", loc);
  if (scale == 0) scale = 1.0 / std::sqrt(double(q.shape().back()));
  if (impl == AttentionImpl::fused) {
    ir::Attrs a;
    a.value = scale;
    a.causal = causal;
    return detail::apply(Op::attention, {q, k, v}, std::move(a), "attention", loc);
  }
  // Naive: the whole [.., Sq, Sk] score matrix, as most code writes it.
  int r = q.ndim();
  std::vector<int> perm;
  for (int d = 0; d < r - 2; ++d) perm.push_back(d);
  perm.push_back(r - 1);
  perm.push_back(r - 2);
  Array s = multiply(matmul(q, transpose(k, perm, loc), loc), scale, loc);
  if (causal) {
    int64_t sq = q.dim(-2), sk = k.dim(-2);
    ir::Attrs rows, cols;
    rows.shape = cols.shape = {sq, sk};
    rows.dtype = cols.dtype = Dtype::i32;
    rows.axis = 0;
    cols.axis = 1;
    Array row = detail::apply(Op::iota, {}, std::move(rows), "attention", loc, q.device());
    Array col = detail::apply(Op::iota, {}, std::move(cols), "attention", loc, q.device());
    Array visible = less_equal(col, add(row, double(sk - sq), loc), loc);
    s = where(broadcast_to(visible, s.shape(), loc), s, -std::numeric_limits<double>::infinity(), loc);
  }
  return matmul(softmax(s, -1, loc), v, loc);
}

}  // namespace loupe::rt
