// Arrays made on the device: constants and ranges.
#include <fmt/format.h>

#include <cmath>

#include "trace/op_helpers.h"

namespace loupe::rt {

using ir::Op;

Array full(const Shape& shape, double value, Dtype dtype, Device device, Loc loc) {
  ir::Attrs a;
  a.shape = shape;
  a.dtype = dtype;
  a.value = dtype == Dtype::boolean ? double(value != 0) : value;
  return detail::apply(Op::full, {}, std::move(a), "full", loc, device);
}

Array zeros(const Shape& shape, Dtype dtype, Device device, Loc loc) { return full(shape, 0, dtype, device, loc); }
Array ones(const Shape& shape, Dtype dtype, Device device, Loc loc) { return full(shape, 1, dtype, device, loc); }
Array zeros_like(const Array& x, Loc loc) { return full(x.shape(), 0, x.dtype(), x.device(), loc); }
Array ones_like(const Array& x, Loc loc) { return full(x.shape(), 1, x.dtype(), x.device(), loc); }

Array arange(double start, double stop, double step, Dtype dtype, Device device, Loc loc) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw ShapeError(fmt::format("arange at {}: needs finite bounds and a non-zero step", ir::format_loc(loc)));
  int64_t n = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
  ir::Attrs a;
  a.shape = {n};
  a.dtype = dtype;
  a.axis = 0;
  Array r = detail::apply(Op::iota, {}, std::move(a), "arange", loc, device);
  if (step != 1) r = multiply(r, step, loc);
  if (start != 0) r = add(r, start, loc);
  return r;
}

}  // namespace loupe::rt
