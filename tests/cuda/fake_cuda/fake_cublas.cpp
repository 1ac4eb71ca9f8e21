// A cuBLAS with the two products loupe's CUDA device calls, for the fake
// CUDA runtime (fake_cudart.cpp): column-major, plain loops, f32, f16 and
// bf16 operands with double accumulation.
#include <cublas_v2.h>

#include <cstring>

#include "backend/cpu/fast_math.h"

namespace {

namespace cpu = loupe::rt::backend::cpu;

float load(const void* p, cudaDataType t, long long i) {
  switch (t) {
    case CUDA_R_16F: return cpu::half_to_float(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_16BF: return cpu::bfloat_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

void store(void* p, cudaDataType t, long long i, float v) {
  switch (t) {
    case CUDA_R_16F: static_cast<uint16_t*>(p)[i] = cpu::float_to_half(v); break;
    case CUDA_R_16BF: static_cast<uint16_t*>(p)[i] = cpu::float_to_bfloat(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

size_t size_of(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const void* a, cudaDataType at,
          int lda, const void* b, cudaDataType bt, int ldb, float beta, void* c, cudaDataType ct, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        double x = load(a, at, ta == CUBLAS_OP_N ? i + (long long)p * lda : p + (long long)i * lda);
        double y = load(b, bt, tb == CUBLAS_OP_N ? p + (long long)j * ldb : j + (long long)p * ldb);
        s += x * y;
      }
      long long o = i + (long long)j * ldc;
      store(c, ct, o, float(alpha * s + (beta != 0 ? beta * load(c, ct, o) : 0.0)));
    }
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  *h = reinterpret_cast<cublasHandle_t>(new int(0));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  delete reinterpret_cast<int*>(h);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
const char* cublasGetStatusString(cublasStatus_t) { return "fake cuBLAS status"; }

cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType at, int lda, const void* b, cudaDataType bt,
                            int ldb, const void* beta, void* c, cudaDataType ct, int ldc, cublasComputeType_t,
                            cublasGemmAlgo_t) {
  gemm(ta, tb, m, n, k, *static_cast<const float*>(alpha), a, at, lda, b, bt, ldb, *static_cast<const float*>(beta), c,
       ct, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void* alpha, const void* a, cudaDataType at, int lda,
                                          long long sa, const void* b, cudaDataType bt, int ldb, long long sb,
                                          const void* beta, void* c, cudaDataType ct, int ldc, long long sc,
                                          int batches, cublasComputeType_t, cublasGemmAlgo_t) {
  for (int i = 0; i < batches; ++i)
    gemm(ta, tb, m, n, k, *static_cast<const float*>(alpha), static_cast<const char*>(a) + i * sa * size_of(at), at,
         lda, static_cast<const char*>(b) + i * sb * size_of(bt), bt, ldb, *static_cast<const float*>(beta),
         static_cast<char*>(c) + i * sc * size_of(ct), ct, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
