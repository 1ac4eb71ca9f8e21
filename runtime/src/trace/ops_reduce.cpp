// Reductions over axes.
#include <fmt/format.h>

#include <algorithm>

#include "trace/op_helpers.h"

namespace loupe::rt {

using ir::Op;

namespace detail {

std::vector<int64_t> normalize_axes(const std::vector<int>& axes, const Array& x, std::string_view name,
                                    const std::source_location& loc) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int d = 0; d < x.ndim(); ++d) out.push_back(d);
    return out;
  }
  for (int a : axes) out.push_back(ir::normalize_axis(a, x.shape().size(), name, {type_of(x)}, loc));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    ir::fail(name, {type_of(x)}, "an axis appears twice", loc);
  return out;
}

Array reduce(Op op, std::string_view name, const Array& x, std::vector<int64_t> axes, bool keepdims,
             const std::source_location& loc) {
  if (axes.empty() && op != Op::argmax) return x;  // a scalar reduced over nothing
  ir::Attrs a;
  a.axes = std::move(axes);
  a.keepdims = keepdims;
  return apply(op, {x}, std::move(a), name, loc);
}

Array sum_to(const Array& x, const Shape& shape, const std::source_location& loc) {
  if (x.shape() == shape) return x;
  const Shape& s = x.shape();
  size_t off = s.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < s.size(); ++d)
    if (d < off || (shape[d - off] == 1 && s[d] != 1)) axes.push_back(int64_t(d));
  Array r = reduce(Op::reduce_sum, "sum", x, axes, true, loc);
  return reshape(r, shape, loc);
}

}  // namespace detail

Array sum(const Array& x, std::vector<int> axes, bool keepdims, Loc loc) {
  return detail::reduce(Op::reduce_sum, "sum", x, detail::normalize_axes(axes, x, "sum", loc), keepdims, loc);
}

Array max(const Array& x, std::vector<int> axes, bool keepdims, Loc loc) {
  return detail::reduce(Op::reduce_max, "max", x, detail::normalize_axes(axes, x, "max", loc), keepdims, loc);
}

Array min(const Array& x, std::vector<int> axes, bool keepdims, Loc loc) {
  return detail::reduce(Op::reduce_min, "min", x, detail::normalize_axes(axes, x, "min", loc), keepdims, loc);
}

Array mean(const Array& x, std::vector<int> axes, bool keepdims, Loc loc) {
  std::vector<int64_t> ax = detail::normalize_axes(axes, x, "mean", loc);
  int64_t count = 1;
  for (int64_t a : ax) count *= x.shape()[size_t(a)];
  Array xf = is_floating(x.dtype()) ? x : astype(x, Dtype::f32, loc);
  Array s = detail::reduce(Op::reduce_sum, "mean", xf, ax, keepdims, loc);
  return multiply(s, count > 0 ? 1.0 / double(count) : NAN, loc);
}

Array argmax(const Array& x, int axis, bool keepdims, Loc loc) {
  int64_t a = ir::normalize_axis(axis, x.shape().size(), "argmax", {detail::type_of(x)}, loc);
  return detail::reduce(Op::argmax, "argmax", x, {a}, keepdims, loc);
}

}  // namespace loupe::rt
