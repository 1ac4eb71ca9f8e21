// Counter-based random numbers: a value is a hash of (key, element index),
// so results do not depend on how the work is split or fused.
#include <fmt/format.h>

#include <cmath>

#include "loupe/rt/random.h"
#include "trace/op_helpers.h"

namespace loupe::rt::random {

using ir::Op;

Array key(uint64_t seed, Device device, Loc loc) { return full({}, double(seed), Dtype::i64, device, loc); }

std::vector<Array> split(const Array& key, int n, Loc loc) {
  if (n < 1) throw ShapeError(fmt::format("random::split at {}: needs n >= 1", ir::format_loc(loc)));
  ir::Attrs a;
  a.shape = {n};
  Array bits = detail::apply(Op::random_bits, {key}, std::move(a), "random::split", loc);
  std::vector<Array> keys;
  for (int i = 0; i < n; ++i) keys.push_back(reshape(slice(bits, {i}, {i + 1}, {}, loc), {}, loc));
  return keys;
}

Array normal(const Array& key, const Shape& shape, Dtype dtype, double mean, double stddev, Loc loc) {
  if (!is_floating(dtype))
    throw ShapeError(fmt::format("random::normal at {}: needs a floating dtype", ir::format_loc(loc)));
  ir::Attrs a;
  a.shape = shape;
  Array r = detail::apply(Op::random_normal, {key}, std::move(a), "random::normal", loc);
  if (stddev != 1) r = multiply(r, stddev, loc);
  if (mean != 0) r = add(r, mean, loc);
  return astype(r, dtype, loc);
}

Array uniform(const Array& key, const Shape& shape, Dtype dtype, double low, double high, Loc loc) {
  if (!is_floating(dtype))
    throw ShapeError(fmt::format("random::uniform at {}: needs a floating dtype", ir::format_loc(loc)));
  ir::Attrs a;
  a.shape = shape;
  Array r = detail::apply(Op::random_uniform, {key}, std::move(a), "random::uniform", loc);
  if (high - low != 1) r = multiply(r, high - low, loc);
  if (low != 0) r = add(r, low, loc);
  return astype(r, dtype, loc);
}

Array randint(const Array& key, const Shape& shape, int64_t low, int64_t high, Dtype dtype, Loc loc) {
  if (!is_integer(dtype) || high <= low)
    throw ShapeError(fmt::format("random::randint at {}: needs an integer dtype and low < high", ir::format_loc(loc)));
  ir::Attrs a;
  a.shape = shape;
  Array u = detail::apply(Op::random_uniform, {key}, std::move(a), "random::randint", loc);
  Array r = astype(multiply(u, double(high - low), loc), dtype, loc);
  return low != 0 ? add(r, double(low), loc) : r;
}

}  // namespace loupe::rt::random
