// Whole-buffer conversions between a storage dtype and f32, for kernels
// that compute in f32 over f16/bf16 operands (matmul, attention).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/fast_math.h"
#include "loupe/rt/dtype.h"

namespace loupe::rt::backend::cpu {

inline void to_f32(Dtype dtype, const void* src, int64_t n, float* dst) {
  if (dtype == Dtype::f16) {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(s[i]);
  } else if (dtype == Dtype::bf16) {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bfloat_to_float(s[i]);
  } else {
    const float* s = static_cast<const float*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
  }
}

inline void from_f32(Dtype dtype, const float* src, int64_t n, void* dst) {
  if (dtype == Dtype::f16) {
    uint16_t* d = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = float_to_half(src[i]);
  } else if (dtype == Dtype::bf16) {
    uint16_t* d = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = float_to_bfloat(src[i]);
  } else {
    float* d = static_cast<float*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = src[i];
  }
}

// An f32 view of a buffer: the buffer itself when it is f32, else a
// converted copy.
class F32View {
 public:
  F32View(Dtype dtype, const void* src, int64_t n) {
    if (dtype == Dtype::f32) {
      ptr_ = static_cast<const float*>(src);
    } else {
      copy_.resize(size_t(n));
      to_f32(dtype, src, n, copy_.data());
      ptr_ = copy_.data();
    }
  }
  const float* data() const { return ptr_; }

 private:
  const float* ptr_ = nullptr;
  std::vector<float> copy_;
};

}  // namespace loupe::rt::backend::cpu
