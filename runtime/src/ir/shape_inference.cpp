#include "ir/shape_inference.h"

#include <fmt/format.h>

#include <algorithm>

#include "loupe/rt/errors.h"

namespace loupe::rt::ir {

void fail(std::string_view name, const std::vector<Type>& in, const std::string& problem,
          const std::source_location& loc) {
  std::string operands;
  for (size_t i = 0; i < in.size(); ++i) operands += (i ? ", " : "") + type_str(in[i].dtype, in[i].shape);
  throw ShapeError(fmt::format("{}({}) at {}: {}", name, operands, format_loc(loc), problem));
}

int64_t normalize_axis(int64_t axis, size_t rank, std::string_view name, const std::vector<Type>& in,
                       const std::source_location& loc) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) fail(name, in, fmt::format("axis {} is out of range for rank {}", axis, r), loc);
  return axis < 0 ? axis + r : axis;
}

namespace {

struct Checker {
  std::string_view name;
  const std::vector<Type>& in;
  const std::source_location& loc;

  [[noreturn]] void fail(const std::string& problem) const { ir::fail(name, in, problem, loc); }
  void arity(size_t n) const {
    if (in.size() != n) fail(fmt::format("expects {} operand{}, got {}", n, n == 1 ? "" : "s", in.size()));
  }
  void floating(size_t i) const {
    if (!is_floating(in[i].dtype))
      fail(fmt::format("needs a floating-point operand, got {} (cast with astype)", dtype_name(in[i].dtype)));
  }
  void numeric(size_t i) const {
    if (in[i].dtype == Dtype::boolean) fail("needs a numeric operand, got bool (cast with astype)");
  }
  void boolean(size_t i) const {
    if (in[i].dtype != Dtype::boolean) fail(fmt::format("needs a bool operand, got {}", dtype_name(in[i].dtype)));
  }
  void integer(size_t i) const {
    if (!is_integer(in[i].dtype)) fail(fmt::format("needs integer indices, got {}", dtype_name(in[i].dtype)));
  }
  void same_dtype(size_t a, size_t b) const {
    if (in[a].dtype != in[b].dtype)
      fail(fmt::format("dtypes differ ({} vs {}); cast one operand with astype", dtype_name(in[a].dtype),
                       dtype_name(in[b].dtype)));
  }
  void same_shape(size_t a, size_t b) const {
    if (in[a].shape != in[b].shape)
      fail(fmt::format("shapes differ ({} vs {})", shape_str(in[a].shape), shape_str(in[b].shape)));
  }
  // Two operands of one dtype and one shape, as arithmetic takes them.
  void alike_pair() const {
    arity(2);
    same_dtype(0, 1);
    same_shape(0, 1);
  }
};

Type reduce_type(const Checker& c, const Attrs& a, Dtype out_dtype) {
  const Shape& s = c.in[0].shape;
  std::vector<bool> reduced(s.size(), false);
  for (size_t i = 0; i < a.axes.size(); ++i) {
    int64_t ax = a.axes[i];
    if (ax < 0 || ax >= int64_t(s.size())) c.fail(fmt::format("axis {} is out of range for rank {}", ax, s.size()));
    if (reduced[size_t(ax)]) c.fail(fmt::format("axis {} appears twice", ax));
    reduced[size_t(ax)] = true;
  }
  Type t{{}, out_dtype};
  for (size_t d = 0; d < s.size(); ++d) {
    if (!reduced[d]) t.shape.push_back(s[d]);
    else if (a.keepdims) t.shape.push_back(1);
    if (reduced[d] && s[d] == 0 && c.name != "sum" && c.name != "reduce_sum" && c.name != "mean")
      c.fail(fmt::format("cannot reduce over an empty axis {}", d));
  }
  return t;
}

// full and iota: no operands; their attributes give the type.
Type infer_filled(Op op, const Checker& c, const Attrs& a) {
  c.arity(0);
  for (int64_t d : a.shape)
    if (d < 0) c.fail(fmt::format("negative extent in shape {}", shape_str(a.shape)));
  if (op == Op::iota && (a.axis < 0 || a.axis >= int64_t(a.shape.size())))
    c.fail(fmt::format("axis {} is out of range for shape {}", a.axis, shape_str(a.shape)));
  return {a.shape, a.dtype};
}

Type infer_random(Op op, const Checker& c, const Attrs& a) {
  c.arity(1);
  if (c.in[0].dtype != Dtype::i64 || !c.in[0].shape.empty())
    c.fail("the key must be an i64 scalar made by random::key or random::split");
  return {a.shape, op == Op::random_bits ? Dtype::i64 : Dtype::f32};
}

Type infer_unary(Op op, const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  switch (op) {
    LOUPE_OPS_BUT_UNARY(LOUPE_OP_CASE)
    break;  // another group
    case Op::exp:
    case Op::log:
    case Op::tanh:
    case Op::sqrt:
    case Op::rsqrt:
    case Op::gelu:
    case Op::sigmoid:
      c.arity(1);
      c.floating(0);
      return in[0];
    case Op::neg:
    case Op::abs:
    case Op::relu:
      c.arity(1);
      c.numeric(0);
      return in[0];
    case Op::logical_not:
      c.arity(1);
      c.boolean(0);
      return in[0];
    case Op::cast: c.arity(1); return {in[0].shape, a.dtype};
    case Op::stop_gradient: c.arity(1); return in[0];
  }
  c.fail("unknown op");
}

// Two operands of one dtype and one shape.
Type infer_arithmetic(Op op, const Checker& c) {
  c.alike_pair();
  if (op == Op::pow) c.floating(0);
  else c.numeric(0);
  return c.in[0];
}

// Two operands of one dtype and one shape; a bool result.
Type infer_comparison(const Checker& c) {
  c.alike_pair();
  return {c.in[0].shape, Dtype::boolean};
}

Type infer_logical(const Checker& c) {
  c.arity(2);
  c.boolean(0);
  c.boolean(1);
  c.same_shape(0, 1);
  return c.in[0];
}

Type infer_where(const Checker& c) {
  c.arity(3);
  c.boolean(0);
  c.same_dtype(1, 2);
  c.same_shape(0, 1);
  c.same_shape(1, 2);
  return c.in[1];
}

Type infer_reduction(Op op, const Checker& c, const Attrs& a) {
  c.arity(1);
  c.numeric(0);
  if (op != Op::argmax) return reduce_type(c, a, c.in[0].dtype);
  if (a.axes.size() != 1) c.fail("reduces exactly one axis");
  return reduce_type(c, a, Dtype::i32);
}

Type infer_reshape(const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  c.arity(1);
  if (numel(a.shape) != numel(in[0].shape))
    c.fail(fmt::format("cannot reshape {} elements into {} ({} elements)", numel(in[0].shape), shape_str(a.shape),
                       numel(a.shape)));
  return {a.shape, in[0].dtype};
}

Type infer_transpose(const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  c.arity(1);
  size_t r = in[0].shape.size();
  if (a.axes.size() != r) c.fail(fmt::format("permutation {} does not have {} axes", shape_str(a.axes), r));
  std::vector<bool> seen(r, false);
  Shape out;
  for (int64_t p : a.axes) {
    if (p < 0 || p >= int64_t(r) || seen[size_t(p)])
      c.fail(fmt::format("{} is not a permutation of the axes", shape_str(a.axes)));
    seen[size_t(p)] = true;
    out.push_back(in[0].shape[size_t(p)]);
  }
  return {out, in[0].dtype};
}

Type infer_broadcast_to(const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  c.arity(1);
  const Shape& s = in[0].shape;
  if (s.size() > a.shape.size())
    c.fail(fmt::format("cannot broadcast to {}, which has fewer axes", shape_str(a.shape)));
  size_t off = a.shape.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1 && s[d] != a.shape[off + d])
      c.fail(fmt::format("cannot broadcast to {}: axis {} has extent {}", shape_str(a.shape), d, s[d]));
  return {a.shape, in[0].dtype};
}

Type infer_slice(const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  c.arity(1);
  const Shape& s = in[0].shape;
  if (a.starts.size() != s.size() || a.stops.size() != s.size() || a.steps.size() != s.size())
    c.fail(fmt::format("needs a start, stop and step for each of the {} axes", s.size()));
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (a.steps[d] < 1) c.fail(fmt::format("step {} on axis {} is not positive", a.steps[d], d));
    if (a.starts[d] < 0 || a.starts[d] > a.stops[d] || a.stops[d] > s[d])
      c.fail(fmt::format("range {}:{} is out of bounds for axis {} of extent {}", a.starts[d], a.stops[d], d, s[d]));
    out.push_back((a.stops[d] - a.starts[d] + a.steps[d] - 1) / a.steps[d]);
  }
  return {out, in[0].dtype};
}

Type infer_pad(const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  c.arity(1);
  const Shape& s = in[0].shape;
  if (a.shape.size() != s.size() || a.starts.size() != s.size() || a.steps.size() != s.size())
    c.fail("pad needs a target shape, starts and steps of the operand's rank");
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] > 0 && (a.starts[d] < 0 || a.steps[d] < 1 || a.starts[d] + (s[d] - 1) * a.steps[d] >= a.shape[d]))
      c.fail(fmt::format("the operand does not fit in {} on axis {}", shape_str(a.shape), d));
  return {a.shape, in[0].dtype};
}

Type infer_concat(const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  if (in.empty()) c.fail("needs at least one operand");
  size_t r = in[0].shape.size();
  if (a.axis < 0 || a.axis >= int64_t(r)) c.fail(fmt::format("axis {} is out of range for rank {}", a.axis, r));
  Shape out = in[0].shape;
  out[size_t(a.axis)] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    c.same_dtype(0, i);
    if (in[i].shape.size() != r) c.fail("operands have different ranks");
    for (size_t d = 0; d < r; ++d)
      if (int64_t(d) != a.axis && in[i].shape[d] != in[0].shape[d])
        c.fail(fmt::format("operands differ on axis {} ({} vs {})", d, in[0].shape[d], in[i].shape[d]));
    out[size_t(a.axis)] += in[i].shape[size_t(a.axis)];
  }
  return {out, in[0].dtype};
}

Type infer_matmul(const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  c.arity(2);
  c.same_dtype(0, 1);
  c.floating(0);
  const Shape &x = in[0].shape, &y = in[1].shape;
  if (x.size() < 2 || y.size() < 2) c.fail("operands need at least 2 axes");
  int64_t m = a.transpose_a ? x[x.size() - 1] : x[x.size() - 2];
  int64_t kx = a.transpose_a ? x[x.size() - 2] : x[x.size() - 1];
  int64_t ky = a.transpose_b ? y[y.size() - 1] : y[y.size() - 2];
  int64_t n = a.transpose_b ? y[y.size() - 2] : y[y.size() - 1];
  if (kx != ky) c.fail(fmt::format("contracting axes differ ({} vs {})", kx, ky));
  size_t bx = x.size() - 2, by = y.size() - 2, b = std::max(bx, by);
  Shape out(b, 1);
  for (size_t d = 0; d < b; ++d) {
    int64_t ex = d + bx >= b ? x[d + bx - b] : 1;
    int64_t ey = d + by >= b ? y[d + by - b] : 1;
    if (ex != ey && ex != 1 && ey != 1) c.fail(fmt::format("batch axes do not broadcast ({} vs {})", ex, ey));
    out[d] = ex == 1 ? ey : ex;
  }
  out.push_back(m);
  out.push_back(n);
  return {out, in[0].dtype};
}

Type infer_gather(const Checker& c) {
  const std::vector<Type>& in = c.in;
  c.arity(2);
  c.integer(1);
  if (in[0].shape.empty()) c.fail("the table needs at least one axis");
  Shape out = in[1].shape;
  out.insert(out.end(), in[0].shape.begin() + 1, in[0].shape.end());
  return {out, in[0].dtype};
}

Type infer_scatter_add(const Checker& c, const Attrs& a) {
  const std::vector<Type>& in = c.in;
  c.arity(2);
  c.integer(0);
  if (a.shape.empty()) c.fail("the result needs at least one axis");
  Shape expect = in[0].shape;
  expect.insert(expect.end(), a.shape.begin() + 1, a.shape.end());
  if (in[1].shape != expect)
    c.fail(fmt::format("updates must have shape {} for a result of shape {}", shape_str(expect), shape_str(a.shape)));
  return {a.shape, in[1].dtype};
}

// attention(q, k, v), and its gradient attention_bwd(q, k, v, o, do).
Type infer_attention(Op op, const Checker& c) {
  const std::vector<Type>& in = c.in;
  c.arity(op == Op::attention ? 3 : 5);
  for (size_t i = 1; i < in.size(); ++i) c.same_dtype(0, i);
  c.floating(0);
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size()) c.fail("q, k and v need the same rank, at least 2");
  size_t r = q.size();
  for (size_t d = 0; d + 2 < r; ++d)
    if (q[d] != k[d] || q[d] != v[d]) c.fail(fmt::format("batch axis {} differs", d));
  if (q[r - 1] != k[r - 1]) c.fail(fmt::format("q and k head sizes differ ({} vs {})", q[r - 1], k[r - 1]));
  if (k[r - 2] != v[r - 2]) c.fail(fmt::format("k and v lengths differ ({} vs {})", k[r - 2], v[r - 2]));
  Shape out(q.begin(), q.end() - 1);
  out.push_back(v[r - 1]);
  if (op == Op::attention) return {out, in[0].dtype};
  if (in[3].shape != out || in[4].shape != out) c.fail("the output and its cotangent need the attention's shape");
  return {{numel(q) + numel(k) + numel(v)}, in[0].dtype};
}

}  // namespace

Type infer(Op op, const std::vector<Type>& in, const Attrs& a, std::string_view name, const std::source_location& loc) {
  Checker c{name, in, loc};
  switch (op) {
    LOUPE_SOURCE_OPS(LOUPE_OP_CASE) c.fail("is not inferred");
    LOUPE_UNARY_OPS(LOUPE_OP_CASE) return infer_unary(op, c, a);
    LOUPE_ARITHMETIC_OPS(LOUPE_OP_CASE) return infer_arithmetic(op, c);
    LOUPE_COMPARISON_OPS(LOUPE_OP_CASE) return infer_comparison(c);
    LOUPE_LOGICAL_OPS(LOUPE_OP_CASE) return infer_logical(c);
    LOUPE_REDUCTION_OPS(LOUPE_OP_CASE) return infer_reduction(op, c, a);
    case Op::full:
    case Op::iota: return infer_filled(op, c, a);
    case Op::random_bits:
    case Op::random_uniform:
    case Op::random_normal: return infer_random(op, c, a);
    case Op::where: return infer_where(c);
    case Op::reshape: return infer_reshape(c, a);
    case Op::transpose: return infer_transpose(c, a);
    case Op::broadcast_to: return infer_broadcast_to(c, a);
    case Op::slice: return infer_slice(c, a);
    case Op::pad: return infer_pad(c, a);
    case Op::concat: return infer_concat(c, a);
    case Op::matmul: return infer_matmul(c, a);
    case Op::gather: return infer_gather(c);
    case Op::scatter_add: return infer_scatter_add(c, a);
    case Op::attention:
    case Op::attention_bwd: return infer_attention(op, c);
  }
  c.fail("unknown op");
}

}  // namespace loupe::rt::ir
