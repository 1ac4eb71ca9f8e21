// Batched matrix products through OpenBLAS's sgemm (on every core; see
// init_kernels). f16 and bf16 operands are widened to f32 first.
#include <cstring>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/kernels.h"

namespace loupe::rt::backend::cpu {

void run_matmul(const exec::MatmulKernel& k, const std::vector<void*>& buffers) {
  const int64_t m = k.m, n = k.n, kk = k.k;
  const int64_t batches = numel(k.batch);
  if (kk == 0) {  // an empty sum: zeros, whatever BLAS does with k = 0
    std::memset(buffers[2], 0, size_t(batches * m * n) * itemsize(k.dtype));
    return;
  }
  int64_t a_batches = 1, b_batches = 1;
  for (size_t d = 0; d < k.batch.size(); ++d) {
    if (k.a_batch_stride[d] != 0) a_batches *= k.batch[d];
    if (k.b_batch_stride[d] != 0) b_batches *= k.batch[d];
  }
  F32View a(k.dtype, buffers[0], a_batches * m * kk);
  F32View b(k.dtype, buffers[1], b_batches * kk * n);
  std::vector<float> c_copy;
  float* c = static_cast<float*>(buffers[2]);
  if (k.dtype != Dtype::f32) {
    c_copy.resize(size_t(batches * m * n));
    c = c_copy.data();
  }
  const auto sgemm = blas().sgemm;
  const CBLAS_TRANSPOSE ta = k.transpose_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = k.transpose_b ? CblasTrans : CblasNoTrans;
  const int64_t lda = k.transpose_a ? m : kk, ldb = k.transpose_b ? kk : n;

  // [batch.., M, K] @ [K, N] with one shared right operand is one tall
  // product: fold the batch into M.
  if (b_batches == 1 && a_batches == batches && !k.transpose_a && batches > 1) {
    sgemm(CblasRowMajor, ta, tb, int(m * batches), int(n), int(kk), 1.0f, a.data(), int(lda), b.data(), int(ldb), 0.0f,
          c, int(n));
  } else {
    const exec::MatmulOffsets off = exec::batch_offsets(k);
    for (int64_t bi = 0; bi < batches; ++bi) {
      if (m > 0 && n > 0) {
        sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(kk), 1.0f, a.data() + off.a[size_t(bi)] * m * kk, int(lda),
              b.data() + off.b[size_t(bi)] * kk * n, int(ldb), 0.0f, c + bi * m * n, int(n));
      }
    }
  }
  if (k.dtype != Dtype::f32) from_f32(k.dtype, c, batches * m * n, buffers[2]);
}

}  // namespace loupe::rt::backend::cpu
