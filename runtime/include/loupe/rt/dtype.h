// Element types of arrays.
//
// f16 and bf16 are storage types: kernels load them, compute in f32 and
// round the result when they store it, as most GPU libraries do outside
// tensor cores. Integer and bool arrays compute in 64-bit integers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace loupe::rt {

enum class Dtype : uint8_t { f32, f16, bf16, i32, i64, boolean };

inline constexpr Dtype f32 = Dtype::f32;
inline constexpr Dtype f16 = Dtype::f16;
inline constexpr Dtype bf16 = Dtype::bf16;
inline constexpr Dtype i32 = Dtype::i32;
inline constexpr Dtype i64 = Dtype::i64;
inline constexpr Dtype boolean = Dtype::boolean;

// Bytes per element.
constexpr size_t itemsize(Dtype d) {
  switch (d) {
    case Dtype::f32: return 4;
    case Dtype::f16: return 2;
    case Dtype::bf16: return 2;
    case Dtype::i32: return 4;
    case Dtype::i64: return 8;
    case Dtype::boolean: return 1;
  }
  return 0;
}

constexpr bool is_floating(Dtype d) { return d == Dtype::f32 || d == Dtype::f16 || d == Dtype::bf16; }
constexpr bool is_integer(Dtype d) { return d == Dtype::i32 || d == Dtype::i64; }

// "f32", "f16", "bf16", "i32", "i64", "bool": the spelling of signatures.
std::string_view dtype_name(Dtype d);

// The C++ type that holds one element on the host, for typed reads.
template <typename T>
constexpr Dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return Dtype::f32;
  else if constexpr (std::is_same_v<T, int32_t>) return Dtype::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return Dtype::i64;
  else {
    static_assert(std::is_same_v<T, bool>, "no dtype holds this C++ type: use float, int32_t, int64_t or bool");
    return Dtype::boolean;
  }
}

}  // namespace loupe::rt
