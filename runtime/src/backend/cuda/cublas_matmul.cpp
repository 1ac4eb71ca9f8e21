#include "backend/cuda/cublas_matmul.h"

#include <cublas_v2.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backend/cuda/cuda_check.h"
#include "backend/dynamic_library.h"

#ifndef LOUPE_CUDA_LIBRARY_DIR
#define LOUPE_CUDA_LIBRARY_DIR ""
#endif

namespace loupe::rt::backend::cuda {

// cublas_api.h overloads these two in C++ (for an older compute-type
// argument): the exported functions' types, spelled out.
using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                  const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                  cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                const void*, const void*, cudaDataType, int, long long int, const void*,
                                                cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                                                long long int, int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasMatmul::Api {
  backend::DynamicLibrary lib;
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  GemmEx gemm;
  GemmStridedBatchedEx gemm_strided;
  decltype(&cublasGetStatusString) status_string;
};

namespace {

CublasMatmul::Api* load_api() {
  static std::once_flag once;
  static CublasMatmul::Api* api = nullptr;
  static std::string why;
  std::call_once(once, [] {
    auto* a = new CublasMatmul::Api;
    std::vector<std::string> names = {"libcublas.so.13", "libcublas.so"};
    if (*LOUPE_CUDA_LIBRARY_DIR) names.push_back(std::string(LOUPE_CUDA_LIBRARY_DIR) + "/libcublas.so");
    if (!a->lib.open(names, &why)) {
      why = "cuBLAS cannot be loaded: " + why;
      delete a;
      return;
    }
    a->create = a->lib.symbol<decltype(&cublasCreate_v2)>("cublasCreate_v2");
    a->destroy = a->lib.symbol<decltype(&cublasDestroy_v2)>("cublasDestroy_v2");
    a->set_stream = a->lib.symbol<decltype(&cublasSetStream_v2)>("cublasSetStream_v2");
    a->set_math_mode = a->lib.symbol<decltype(&cublasSetMathMode)>("cublasSetMathMode");
    a->gemm = a->lib.symbol<GemmEx>("cublasGemmEx");
    a->gemm_strided = a->lib.symbol<GemmStridedBatchedEx>("cublasGemmStridedBatchedEx");
    a->status_string = a->lib.symbol<decltype(&cublasGetStatusString)>("cublasGetStatusString");
    api = a;
  });
  if (api == nullptr) throw RuntimeError(why);
  return api;
}

cudaDataType data_type(Dtype d) {
  switch (d) {
    case Dtype::f32: return CUDA_R_32F;
    case Dtype::f16: return CUDA_R_16F;
    case Dtype::bf16: return CUDA_R_16BF;
    case Dtype::i32:
    case Dtype::i64:
    case Dtype::boolean: break;
  }
  throw RuntimeError(fmt::format("matmul of {} is not supported on the CUDA device", dtype_name(d)));
}

}  // namespace

CublasMatmul::CublasMatmul() : api_(load_api()) {
  cublasHandle_t h = nullptr;
  cublasStatus_t s = api_->create(&h);
  if (s != CUBLAS_STATUS_SUCCESS) throw RuntimeError(fmt::format("cublasCreate failed: {}", api_->status_string(s)));
  handle_ = h;
  const char* env = std::getenv("LOUPE_CUDA_TF32");
  tf32_ = env != nullptr && *env != 0 && std::strcmp(env, "0") != 0;
  api_->set_math_mode(h, tf32_ ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
}

CublasMatmul::~CublasMatmul() {
  if (handle_) api_->destroy(static_cast<cublasHandle_t>(handle_));
}

void CublasMatmul::run(const exec::MatmulKernel& k, const std::vector<void*>& buffers, cudaStream_t stream) {
  auto* h = static_cast<cublasHandle_t>(handle_);
  const size_t isz = itemsize(k.dtype);
  const int64_t m = k.m, n = k.n, kk = k.k;
  const int64_t batches = numel(k.batch);
  char* c = static_cast<char*>(buffers[2]);
  if (batches == 0 || m == 0 || n == 0) return;
  if (kk == 0) {  // an empty sum: zeros
    check(cudaMemsetAsync(c, 0, size_t(batches * m * n) * isz, stream), "cudaMemsetAsync");
    return;
  }
  api_->set_stream(h, stream);
  const cudaDataType t = data_type(k.dtype);
  const cublasComputeType_t compute =
      k.dtype == Dtype::f32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cublasOperation_t op_a = k.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = k.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = k.transpose_a ? m : kk, ldb = k.transpose_b ? kk : n;
  const float one = 1.0f, zero = 0.0f;
  const char* a = static_cast<const char*>(buffers[0]);
  const char* b = static_cast<const char*>(buffers[1]);
  auto status = [&](cublasStatus_t s) {
    if (s != CUBLAS_STATUS_SUCCESS) throw RuntimeError(fmt::format("cuBLAS matmul failed: {}", api_->status_string(s)));
  };

  const auto [ao, bo] = exec::batch_offsets(k);
  auto progression = [&](const std::vector<int64_t>& v, int64_t* step) {
    *step = v.size() > 1 ? v[1] - v[0] : 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] - v[i - 1] != *step) return false;
    return v[0] == 0;
  };
  int64_t sa = 0, sb = 0;
  // [batch.., M, K] @ [K, N] with one shared right operand: one tall product.
  if (batches > 1 && progression(ao, &sa) && sa == 1 && progression(bo, &sb) && sb == 0 && !k.transpose_a) {
    status(api_->gemm(h, op_b, op_a, int(n), int(m * batches), int(kk), &one, b, t, int(ldb), a, t, int(lda), &zero, c,
                      t, int(n), compute, CUBLAS_GEMM_DEFAULT));
    return;
  }
  if (batches == 1) {
    status(api_->gemm(h, op_b, op_a, int(n), int(m), int(kk), &one, b, t, int(ldb), a, t, int(lda), &zero, c, t, int(n),
                      compute, CUBLAS_GEMM_DEFAULT));
    return;
  }
  if (progression(ao, &sa) && progression(bo, &sb)) {
    status(api_->gemm_strided(h, op_b, op_a, int(n), int(m), int(kk), &one, b, t, int(ldb), sb * kk * n, a, t, int(lda),
                              sa * m * kk, &zero, c, t, int(n), m * n, int(batches), compute, CUBLAS_GEMM_DEFAULT));
    return;
  }
  // Irregular broadcasting: one product per batch.
  for (int64_t bi = 0; bi < batches; ++bi) {
    status(api_->gemm(h, op_b, op_a, int(n), int(m), int(kk), &one, b + size_t(bo[size_t(bi)] * kk * n) * isz, t,
                      int(ldb), a + size_t(ao[size_t(bi)] * m * kk) * isz, t, int(lda), &zero,
                      c + size_t(bi * m * n) * isz, t, int(n), compute, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace loupe::rt::backend::cuda
