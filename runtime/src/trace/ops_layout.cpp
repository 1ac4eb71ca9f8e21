// Shape ops: reshape (an alias of the operand's buffer), transpose,
// slice and broadcast_to (strided views, free inside fused kernels),
// concatenation.
#include <fmt/format.h>

#include <numeric>

#include "trace/op_helpers.h"

namespace loupe::rt {

using ir::Op;

Array reshape(const Array& x, Shape shape, Loc loc) {
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (infer >= 0)
        ir::fail("reshape", {detail::type_of(x)}, fmt::format("{} has more than one -1", shape_str(shape)), loc);
      infer = int(d);
    } else if (shape[d] < 0) {
      ir::fail("reshape", {detail::type_of(x)}, fmt::format("{} has a negative extent", shape_str(shape)), loc);
    } else {
      known *= shape[d];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0)
      ir::fail("reshape", {detail::type_of(x)}, fmt::format("cannot infer the -1 of {}", shape_str(shape)), loc);
    shape[size_t(infer)] = x.size() / known;
  }
  if (shape == x.shape()) return x;
  ir::Attrs a;
  a.shape = std::move(shape);
  return detail::apply(Op::reshape, {x}, std::move(a), "reshape", loc);
}

Array transpose(const Array& x, std::vector<int> perm, Loc loc) {
  ir::Attrs a;
  if (perm.empty()) {
    for (int d = x.ndim() - 1; d >= 0; --d) a.axes.push_back(d);
  } else {
    for (int p : perm) a.axes.push_back(p < 0 ? p + x.ndim() : p);
  }
  bool identity = true;
  for (size_t d = 0; d < a.axes.size(); ++d) identity &= a.axes[d] == int64_t(d);
  if (identity && int(a.axes.size()) == x.ndim()) return x;
  return detail::apply(Op::transpose, {x}, std::move(a), "transpose", loc);
}

Array expand_dims(const Array& x, int axis, Loc loc) {
  int64_t a = ir::normalize_axis(axis, x.shape().size() + 1, "expand_dims", {detail::type_of(x)}, loc);
  Shape s = x.shape();
  s.insert(s.begin() + a, 1);
  return reshape(x, s, loc);
}

Array squeeze(const Array& x, int axis, Loc loc) {
  int64_t a = ir::normalize_axis(axis, x.shape().size(), "squeeze", {detail::type_of(x)}, loc);
  if (x.shape()[size_t(a)] != 1)
    ir::fail("squeeze", {detail::type_of(x)}, fmt::format("axis {} has extent {}, not 1", a, x.shape()[size_t(a)]),
             loc);
  Shape s = x.shape();
  s.erase(s.begin() + a);
  return reshape(x, s, loc);
}

Array slice(const Array& x, std::vector<int64_t> starts, std::vector<int64_t> stops, std::vector<int64_t> steps,
            Loc loc) {
  if (steps.empty()) steps.assign(starts.size(), 1);
  ir::Attrs a;
  a.starts = std::move(starts);
  a.stops = std::move(stops);
  a.steps = std::move(steps);
  bool whole = a.starts.size() == x.shape().size();
  for (size_t d = 0; whole && d < a.starts.size(); ++d)
    whole =
        a.starts[d] == 0 && a.stops.size() > d && a.stops[d] == x.shape()[d] && a.steps.size() > d && a.steps[d] == 1;
  if (whole && a.stops.size() == a.starts.size() && a.steps.size() == a.starts.size()) return x;
  return detail::apply(Op::slice, {x}, std::move(a), "slice", loc);
}

Array concat(const std::vector<Array>& xs, int axis, Loc loc) {
  if (xs.empty()) throw ShapeError(fmt::format("concat at {}: needs at least one array", ir::format_loc(loc)));
  if (xs.size() == 1) return xs[0];
  std::vector<ir::Type> types;
  for (const Array& x : xs) types.push_back(detail::type_of(x));
  ir::Attrs a;
  a.axis = ir::normalize_axis(axis, xs[0].shape().size(), "concat", types, loc);
  return detail::apply(Op::concat, xs, std::move(a), "concat", loc);
}

Array broadcast_to(const Array& x, const Shape& shape, Loc loc) {
  if (x.shape() == shape) return x;
  ir::Attrs a;
  a.shape = shape;
  return detail::apply(Op::broadcast_to, {x}, std::move(a), "broadcast_to", loc);
}

}  // namespace loupe::rt
