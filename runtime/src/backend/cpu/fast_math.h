// Branch-free f32 transcendentals that the compiler can vectorise (the
// C library's are opaque calls), accurate to a few ulp: Cephes' expf and
// logf polynomials and Eigen's rational tanh. Tests compare them with the
// C library in double precision.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace loupe::rt::backend::cpu {

inline float fast_exp(float x) {
  const float hi = 88.3762626647949f, lo = -88.3762626647949f;
  float xc = x > hi ? hi : (x < lo ? lo : x);
  // exp(x) = 2^n * exp(r), r = x - n ln2 in [-ln2/2, ln2/2].
  // Round to nearest by adding and removing 1.5 * 2^23 (no libm call,
  // so the loop vectorises on any x86-64).
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float z = r * r;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  // Scale by 2^n in two steps so that n = -127..128 stays representable.
  int32_t ni = int32_t(n);
  int32_t n1 = ni / 2, n2 = ni - n1;
  float s1 = std::bit_cast<float>(uint32_t(n1 + 127) << 23);
  float s2 = std::bit_cast<float>(uint32_t(n2 + 127) << 23);
  float result = y * s1 * s2;
  result = x > hi ? INFINITY : result;
  result = x < -103.972f ? 0.0f : result;
  return x != x ? x : result;
}

inline float fast_log(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  // Normalise subnormals.
  bool sub = x < 1.17549435e-38f;
  float xs = sub ? x * 8388608.0f : x;
  bits = std::bit_cast<uint32_t>(xs);
  int32_t e = int32_t((bits >> 23) & 0xff) - 126 - (sub ? 23 : 0);
  float m = std::bit_cast<float>((bits & 0x007fffffu) | 0x3f000000u);  // [0.5, 1)
  bool small = m < 0.707106781186547524f;
  e = small ? e - 1 : e;
  float f = small ? m + m - 1.0f : m - 1.0f;
  float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  float fe = float(e);
  y += fe * -2.12194440e-4f;
  y += -0.5f * z;
  float r = f + y;
  r += fe * 0.693359375f;
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  r = x == INFINITY ? INFINITY : r;
  return x != x ? x : r;
}

inline float fast_tanh(float x) {
  const float c = 7.90531110763549805f;
  float xc = x > c ? c : (x < -c ? -c : x);
  float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * xc;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  float r = p / q;
  r = std::fabs(x) < 0.0004f ? x : r;
  return x != x ? x : r;
}

inline float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline float fast_gelu(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + fast_tanh(inner));
}

// ---- 16-bit floats (round to nearest even) -------------------------------

inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = float(mant) * 5.9604644775390625e-08f;  // 2^-24
    return sign ? -v : v;
  }
  uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  return std::bit_cast<float>(bits);
}

inline uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return uint16_t(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (x >= 0x477ff000u) return uint16_t(sign | 0x7c00u);
  if (x < 0x38800000u) {
    float v = std::bit_cast<float>(x) * 16777216.0f;  // in units of 2^-24
    return uint16_t(sign | uint16_t(std::nearbyint(v)));
  }
  x += 0x0fffu + ((x >> 13) & 1u);
  x -= 0x38000000u;
  return uint16_t(sign | (x >> 13));
}

inline float bfloat_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

inline uint16_t float_to_bfloat(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

}  // namespace loupe::rt::backend::cpu
