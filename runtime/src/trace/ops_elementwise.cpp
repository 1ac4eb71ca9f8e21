// Elementwise ops: numpy broadcasting made explicit (broadcast_to nodes,
// free views at run time), scalar operands as host-known constants.
#include <fmt/format.h>

#include <cmath>

#include "trace/op_helpers.h"

namespace loupe::rt {

namespace detail {

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view name, const std::vector<ir::Type>& operands,
                       const std::source_location& loc) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t d = 0; d < r; ++d) {
    int64_t ea = d + a.size() >= r ? a[d + a.size() - r] : 1;
    int64_t eb = d + b.size() >= r ? b[d + b.size() - r] : 1;
    if (ea != eb && ea != 1 && eb != 1)
      ir::fail(
          name, operands,
          fmt::format("shapes {} and {} do not broadcast (axis {}: {} vs {})", shape_str(a), shape_str(b), d, ea, eb),
          loc);
    out[d] = ea == 1 ? eb : ea;
  }
  return out;
}

Array as_array(const Operand& o, const Array& like, std::string_view name, const std::source_location& loc) {
  if (!o.is_scalar()) return o.array();
  double v = o.scalar();
  Dtype dt = like.dtype();
  if (!is_floating(dt) && std::isfinite(v) && v != std::trunc(v))
    ir::fail(name, {type_of(like)},
             fmt::format("the number {} does not fit the {} operand; cast the array with astype", v, dtype_name(dt)),
             loc);
  if (dt == Dtype::boolean) v = v != 0;
  return splat({}, v, dt, like.device());
}

Array broadcast(const Array& x, const Shape& shape, const std::source_location& loc) {
  if (x.shape() == shape) return x;
  ir::Attrs a;
  a.shape = shape;
  return apply(ir::Op::broadcast_to, {x}, std::move(a), "broadcast_to", loc);
}

Array unary(ir::Op op, std::string_view name, const Array& x, const std::source_location& loc) {
  return apply(op, {x}, {}, name, loc);
}

Array binary(ir::Op op, std::string_view name, const Operand& a, const Operand& b, const std::source_location& loc) {
  if (a.is_scalar() && b.is_scalar())
    throw ShapeError(fmt::format("{} at {}: needs at least one array operand", name, ir::format_loc(loc)));
  Array x = a.is_scalar() ? as_array(a, b.array(), name, loc) : a.array();
  Array y = b.is_scalar() ? as_array(b, a.array(), name, loc) : b.array();
  if (!x.valid() || !y.valid())
    throw RuntimeError(fmt::format("{} at {}: an operand is a null Array", name, ir::format_loc(loc)));
  std::vector<ir::Type> types{type_of(x), type_of(y)};
  if (x.dtype() != y.dtype())
    ir::fail(name, types,
             fmt::format("dtypes differ ({} vs {}); cast one operand with astype", dtype_name(x.dtype()),
                         dtype_name(y.dtype())),
             loc);
  Shape out = broadcast_shapes(x.shape(), y.shape(), name, types, loc);
  return apply(op, {broadcast(x, out, loc), broadcast(y, out, loc)}, {}, name, loc);
}

}  // namespace detail

using detail::binary;
using detail::unary;
using ir::Op;

Array neg(const Array& x, Loc loc) { return unary(Op::neg, "neg", x, loc); }
Array exp(const Array& x, Loc loc) { return unary(Op::exp, "exp", x, loc); }
Array log(const Array& x, Loc loc) { return unary(Op::log, "log", x, loc); }
Array tanh(const Array& x, Loc loc) { return unary(Op::tanh, "tanh", x, loc); }
Array sqrt(const Array& x, Loc loc) { return unary(Op::sqrt, "sqrt", x, loc); }
Array rsqrt(const Array& x, Loc loc) { return unary(Op::rsqrt, "rsqrt", x, loc); }
Array relu(const Array& x, Loc loc) { return unary(Op::relu, "relu", x, loc); }
Array gelu(const Array& x, Loc loc) { return unary(Op::gelu, "gelu", x, loc); }
Array sigmoid(const Array& x, Loc loc) { return unary(Op::sigmoid, "sigmoid", x, loc); }
Array abs(const Array& x, Loc loc) { return unary(Op::abs, "abs", x, loc); }
Array logical_not(const Array& x, Loc loc) { return unary(Op::logical_not, "logical_not", x, loc); }
Array stop_gradient(const Array& x, Loc loc) { return unary(Op::stop_gradient, "stop_gradient", x, loc); }

Array add(const Operand& a, const Operand& b, Loc loc) { return binary(Op::add, "add", a, b, loc); }
Array subtract(const Operand& a, const Operand& b, Loc loc) { return binary(Op::sub, "subtract", a, b, loc); }
Array multiply(const Operand& a, const Operand& b, Loc loc) { return binary(Op::mul, "multiply", a, b, loc); }
Array divide(const Operand& a, const Operand& b, Loc loc) { return binary(Op::div, "divide", a, b, loc); }
Array power(const Operand& a, const Operand& b, Loc loc) { return binary(Op::pow, "power", a, b, loc); }
Array maximum(const Operand& a, const Operand& b, Loc loc) { return binary(Op::maximum, "maximum", a, b, loc); }
Array minimum(const Operand& a, const Operand& b, Loc loc) { return binary(Op::minimum, "minimum", a, b, loc); }
Array equal(const Operand& a, const Operand& b, Loc loc) { return binary(Op::eq, "equal", a, b, loc); }
Array equal(const Array& a, const Array& b, Loc loc) { return binary(Op::eq, "equal", a, b, loc); }
Array not_equal(const Operand& a, const Operand& b, Loc loc) { return binary(Op::ne, "not_equal", a, b, loc); }
Array less(const Operand& a, const Operand& b, Loc loc) { return binary(Op::lt, "less", a, b, loc); }
Array less_equal(const Operand& a, const Operand& b, Loc loc) { return binary(Op::le, "less_equal", a, b, loc); }
Array greater(const Operand& a, const Operand& b, Loc loc) { return binary(Op::gt, "greater", a, b, loc); }
Array greater_equal(const Operand& a, const Operand& b, Loc loc) { return binary(Op::ge, "greater_equal", a, b, loc); }
Array logical_and(const Array& a, const Array& b, Loc loc) { return binary(Op::logical_and, "logical_and", a, b, loc); }
Array logical_or(const Array& a, const Array& b, Loc loc) { return binary(Op::logical_or, "logical_or", a, b, loc); }

Array where(const Array& cond, const Operand& a, const Operand& b, Loc loc) {
  const std::string_view name = "where";
  Array x, y;
  if (a.is_scalar() && b.is_scalar()) {
    x = detail::splat({}, a.scalar(), Dtype::f32, cond.device());
    y = detail::splat({}, b.scalar(), Dtype::f32, cond.device());
  } else {
    x = a.is_scalar() ? detail::as_array(a, b.array(), name, loc) : a.array();
    y = b.is_scalar() ? detail::as_array(b, a.array(), name, loc) : b.array();
  }
  std::vector<ir::Type> types{detail::type_of(cond), detail::type_of(x), detail::type_of(y)};
  if (cond.dtype() != Dtype::boolean)
    ir::fail(name, types, fmt::format("the condition must be bool, got {}", dtype_name(cond.dtype())), loc);
  if (x.dtype() != y.dtype())
    ir::fail(name, types,
             fmt::format("dtypes differ ({} vs {}); cast one operand with astype", dtype_name(x.dtype()),
                         dtype_name(y.dtype())),
             loc);
  Shape s = detail::broadcast_shapes(cond.shape(), x.shape(), name, types, loc);
  s = detail::broadcast_shapes(s, y.shape(), name, types, loc);
  return detail::apply(Op::where,
                       {detail::broadcast(cond, s, loc), detail::broadcast(x, s, loc), detail::broadcast(y, s, loc)},
                       {}, name, loc);
}

Array astype(const Array& x, Dtype dtype, Loc loc) {
  if (x.dtype() == dtype) return x;
  ir::Attrs a;
  a.dtype = dtype;
  return detail::apply(Op::cast, {x}, std::move(a), "astype", loc);
}

}  // namespace loupe::rt
