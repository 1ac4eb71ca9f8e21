// Counter-based random numbers: a value is a hash of (key, element index),
// so results do not depend on how the work is split or fused.
#include <fmt/format.h>

#include <cmath>

#include "loupe/rt/random.h"
#include "trace/op_helpers.h"

namespace loupe::rt::random {

using ir::Op;

namespace {

// The raw draw of `op` from `key`: values of `shape` (the op named `name`).
Array draw(Op op, const Array& key, const Shape& shape, std::string_view name, Loc loc) {
  ir::Attrs a;
  a.shape = shape;
  return detail::apply(op, {key}, std::move(a), name, loc);
}

// A draw of `op` (a standard normal or uniform in [0, 1)) scaled by `scale`,
// shifted by `shift` and cast to the floating dtype `dtype`.
Array floating_draw(Op op, const Array& key, const Shape& shape, Dtype dtype, double shift, double scale,
                    std::string_view name, Loc loc) {
  if (!is_floating(dtype)) throw ShapeError(fmt::format("{} at {}: needs a floating dtype", name, ir::format_loc(loc)));
  Array r = draw(op, key, shape, name, loc);
  if (scale != 1) r = multiply(r, scale, loc);
  if (shift != 0) r = add(r, shift, loc);
  return astype(r, dtype, loc);
}

}  // namespace

Array key(uint64_t seed, Device device, Loc loc) { return full({}, double(seed), Dtype::i64, device, loc); }

std::vector<Array> split(const Array& key, int n, Loc loc) {
  if (n < 1) throw ShapeError(fmt::format("random::split at {}: needs n >= 1", ir::format_loc(loc)));
  Array bits = draw(Op::random_bits, key, {n}, "random::split", loc);
  std::vector<Array> keys;
  for (int i = 0; i < n; ++i) keys.push_back(reshape(slice(bits, {i}, {i + 1}, {}, loc), {}, loc));
  return keys;
}

Array normal(const Array& key, const Shape& shape, Dtype dtype, double mean, double stddev, Loc loc) {
  return floating_draw(Op::random_normal, key, shape, dtype, mean, stddev, "random::normal", loc);
}

Array uniform(const Array& key, const Shape& shape, Dtype dtype, double low, double high, Loc loc) {
  return floating_draw(Op::random_uniform, key, shape, dtype, low, high - low, "random::uniform", loc);
}

Array randint(const Array& key, const Shape& shape, int64_t low, int64_t high, Dtype dtype, Loc loc) {
  if (!is_integer(dtype) || high <= low)
    throw ShapeError(fmt::format("random::randint at {}: needs an integer dtype and low < high", ir::format_loc(loc)));
  Array u = draw(Op::random_uniform, key, shape, "random::randint", loc);
  Array r = astype(multiply(u, double(high - low), loc), dtype, loc);
  return low != 0 ? add(r, double(low), loc) : r;
}

}  // namespace loupe::rt::random
