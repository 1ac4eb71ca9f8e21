// Kernels that move data rather than compute: gather, scatter-add,
// concatenation, padding.
#include <algorithm>
#include <cstring>

#include "backend/cpu/convert.h"
#include "backend/cpu/kernels.h"

namespace loupe::rt::backend::cpu {

namespace {

int64_t index_at(Dtype dtype, const void* indices, int64_t i, int64_t rows) {
  int64_t v = dtype == Dtype::i64 ? static_cast<const int64_t*>(indices)[i] : static_cast<const int32_t*>(indices)[i];
  return std::clamp<int64_t>(v, 0, rows - 1);
}

}  // namespace

void run_gather(const exec::GatherKernel& k, const std::vector<void*>& buffers) {
  const size_t row_bytes = size_t(k.row_size) * itemsize(k.dtype);
  const char* table = static_cast<const char*>(buffers[0]);
  char* out = static_cast<char*>(buffers[2]);
  if (k.rows == 0) {
    std::memset(out, 0, size_t(k.count) * row_bytes);
    return;
  }
  for (int64_t i = 0; i < k.count; ++i)
    std::memcpy(out + size_t(i) * row_bytes, table + size_t(index_at(k.index_dtype, buffers[1], i, k.rows)) * row_bytes,
                row_bytes);
}

void run_scatter_add(const exec::ScatterAddKernel& k, const std::vector<void*>& buffers) {
  const int64_t total = k.rows * k.row_size;
  void* out = buffers[2];
  if (k.dtype == Dtype::i32 || k.dtype == Dtype::i64) {
    std::vector<int64_t> acc(size_t(total), 0);
    for (int64_t i = 0; i < k.count; ++i) {
      int64_t r = index_at(k.index_dtype, buffers[0], i, k.rows);
      for (int64_t j = 0; j < k.row_size; ++j) {
        int64_t u = k.dtype == Dtype::i64 ? static_cast<const int64_t*>(buffers[1])[i * k.row_size + j]
                                          : static_cast<const int32_t*>(buffers[1])[i * k.row_size + j];
        acc[size_t(r * k.row_size + j)] += u;
      }
    }
    for (int64_t j = 0; j < total; ++j) {
      if (k.dtype == Dtype::i64) static_cast<int64_t*>(out)[j] = acc[size_t(j)];
      else static_cast<int32_t*>(out)[j] = int32_t(acc[size_t(j)]);
    }
    return;
  }
  std::vector<float> acc(size_t(total), 0.0f);
  F32View upd(k.dtype, buffers[1], k.count * k.row_size);
  if (k.rows > 0) {
    for (int64_t i = 0; i < k.count; ++i) {
      int64_t r = index_at(k.index_dtype, buffers[0], i, k.rows);
      float* dst = acc.data() + r * k.row_size;
      const float* src = upd.data() + i * k.row_size;
      for (int64_t j = 0; j < k.row_size; ++j) dst[j] += src[j];
    }
  }
  from_f32(k.dtype, acc.data(), total, out);
}

void run_concat(const exec::ConcatKernel& k, const std::vector<void*>& buffers) {
  const size_t isz = itemsize(k.dtype);
  const size_t inputs = k.chunk.size();
  int64_t row = 0;
  for (int64_t c : k.chunk) row += c;
  char* out = static_cast<char*>(buffers[inputs]);
  for (int64_t o = 0; o < k.outer; ++o) {
    char* dst = out + size_t(o * row) * isz;
    for (size_t i = 0; i < inputs; ++i) {
      size_t bytes = size_t(k.chunk[i]) * isz;
      std::memcpy(dst, static_cast<const char*>(buffers[i]) + size_t(o) * bytes, bytes);
      dst += bytes;
    }
  }
}

void run_pad(const exec::PadKernel& k, const std::vector<void*>& buffers) {
  const size_t isz = itemsize(k.dtype);
  const int nd = int(k.in_shape.size());
  char* out = static_cast<char*>(buffers[1]);
  const char* in = static_cast<const char*>(buffers[0]);
  std::memset(out, 0, size_t(numel(k.out_shape)) * isz);
  const int64_t total = numel(k.in_shape);
  if (total == 0) return;
  if (nd == 0) {
    std::memcpy(out, in, isz);
    return;
  }
  std::vector<int64_t> ostr = contiguous_strides(k.out_shape);
  std::vector<int64_t> idx(size_t(nd), 0);
  const int64_t last = k.in_shape[size_t(nd - 1)];
  const int64_t step_last = k.steps[size_t(nd - 1)] * ostr[size_t(nd - 1)];
  for (int64_t pos = 0; pos < total; pos += last) {
    int64_t o = 0;
    for (int d = 0; d < nd; ++d) o += (k.starts[size_t(d)] + idx[size_t(d)] * k.steps[size_t(d)]) * ostr[size_t(d)];
    for (int64_t j = 0; j < last; ++j)
      std::memcpy(out + size_t(o + j * step_last) * isz, in + size_t(pos + j) * isz, isz);
    for (int d = nd - 2; d >= 0; --d) {
      if (++idx[size_t(d)] < k.in_shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

}  // namespace loupe::rt::backend::cpu
