// Dtypes, shapes and static values: names and the small helpers every
// layer uses.
#include <fmt/format.h>

#include "backend/cpu/fast_math.h"
#include "loupe/rt/array.h"
#include "loupe/rt/tree.h"

namespace loupe::rt {

std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::f32: return "f32";
    case Dtype::f16: return "f16";
    case Dtype::bf16: return "bf16";
    case Dtype::i32: return "i32";
    case Dtype::i64: return "i64";
    case Dtype::boolean: return "bool";
  }
  return "?";
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

std::string type_str(Dtype dtype, const Shape& shape) {
  return fmt::format("{}{}", dtype_name(dtype), shape_str(shape));
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

std::string StaticValue::str() const {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>) return fmt::format("\"{}\"", v);
        else return fmt::format("{}", v);
      },
      value);
}

namespace detail {
float half_to_float(uint16_t h) { return backend::cpu::half_to_float(h); }
float bfloat_to_float(uint16_t b) { return backend::cpu::bfloat_to_float(b); }
}  // namespace detail

}  // namespace loupe::rt
