// The device functions at the top of every generated source. They repeat
// the CPU device's helpers (backend/cpu/fast_math.h, kernels.h) bit for bit
// where results must agree exactly: 16-bit float rounding, float to integer
// conversion, and the counter-based random numbers, so that a key gives the
// same numbers on either device.
#include <fmt/format.h>

#include <cmath>

#include "backend/cuda/kernel_plan.h"

namespace loupe::rt::backend::cuda {

const std::string& prelude() {
  static const std::string text = R"(typedef long long i64;
typedef unsigned long long u64;

__device__ __forceinline__ float lp_h2f(unsigned short h) {
  unsigned sign = (unsigned)(h & 0x8000u) << 16;
  unsigned e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    float v = (float)m * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return __uint_as_float(e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112u) << 23) | (m << 13)));
}
__device__ __forceinline__ unsigned short lp_f2h(float f) {
  unsigned x = __float_as_uint(f);
  unsigned short sign = (unsigned short)((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return (unsigned short)(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (x >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
  if (x < 0x38800000u) return (unsigned short)(sign | (unsigned short)rintf(__uint_as_float(x) * 16777216.0f));
  x += 0x0fffu + ((x >> 13) & 1u);
  x -= 0x38000000u;
  return (unsigned short)(sign | (x >> 13));
}
__device__ __forceinline__ float lp_bf2f(unsigned short b) { return __uint_as_float((unsigned)b << 16); }
__device__ __forceinline__ unsigned short lp_f2bf(float f) {
  unsigned x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (unsigned short)(x >> 16);
}
__device__ __forceinline__ i64 lp_f2i(float v) {
  if (!(v == v)) return 0;
  if (v >= 9.2233720368547758e18f) return 0x7fffffffffffffffLL;
  if (v <= -9.2233720368547758e18f) return (i64)0x8000000000000000ULL;
  return (i64)v;
}
__device__ __forceinline__ u64 lp_mix64(u64 z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ u64 lp_random_bits(u64 key, u64 index) {
  return lp_mix64(lp_mix64(key) ^ (index * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
}
__device__ __forceinline__ float lp_rand_uniform(u64 key, u64 index) {
  return (float)(lp_random_bits(key, index) >> 40) * 5.9604644775390625e-08f;
}
__device__ __forceinline__ float lp_rand_normal(u64 key, u64 index) {
  u64 r = lp_random_bits(key, index);
  double u1 = ((double)(r >> 40) + 1.0) * 5.9604644775390625e-08;
  double u2 = (double)(r & 0xffffffull) * 5.9604644775390625e-08;
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
__device__ __forceinline__ float lp_gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float lp_max(float a, float b) { return a > b || a != a ? a : b; }
__device__ __forceinline__ float lp_min(float a, float b) { return a < b || a != a ? a : b; }
__device__ __forceinline__ i64 lp_idiv(i64 a, i64 b) {
  return b == 0 || (b == -1 && a == (i64)0x8000000000000000ULL) ? 0 : a / b;
}
)";
  return text;
}

std::string float_literal(double v) {
  float f = float(v);
  if (std::isnan(f)) return "__uint_as_float(0x7fc00000u)";
  if (std::isinf(f)) return f > 0 ? "__uint_as_float(0x7f800000u)" : "__uint_as_float(0xff800000u)";
  // Nine significant digits give the float back exactly.
  return fmt::format("{:.9e}f", f);
}

std::string int_literal(int64_t v) {
  // Written through its bit pattern, so that INT64_MIN is a literal too.
  if (v < 0) return fmt::format("((i64)0x{:x}ull)", uint64_t(v));
  return fmt::format("{}ll", v);
}

}  // namespace loupe::rt::backend::cuda
