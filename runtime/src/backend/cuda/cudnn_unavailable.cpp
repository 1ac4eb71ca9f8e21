// cuDNN's attention in a build without the cuDNN frontend's headers
// (scripts/setup installs them): every attention runs on loupe's kernel,
// and the reason is said where cuDNN's would have been used.
#include "backend/cuda/cudnn_attention.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::backend::cuda {

namespace {
constexpr const char* kWhy = "this build has no cuDNN frontend headers (scripts/setup installs them)";
}  // namespace

struct CudnnAttention::Plan {};
struct CudnnAttention::State {};

std::string cudnn_attention_rejects(const exec::AttentionKernel&, bool, int) { return kWhy; }

CudnnAttention::CudnnAttention(int) { throw RuntimeError(kWhy); }
CudnnAttention::~CudnnAttention() = default;

std::shared_ptr<CudnnAttention::Plan> CudnnAttention::build_plan(const exec::AttentionKernel&, bool, std::string* why) {
  *why = kWhy;
  return nullptr;
}

std::shared_ptr<const CudnnAttention::Plan> CudnnAttention::plan(const exec::AttentionKernel& k, bool backward,
                                                                 std::string* why) {
  return build_plan(k, backward, why);
}

size_t CudnnAttention::scratch_bytes(const Plan&) { return 0; }

void CudnnAttention::run(const Plan& p, const std::vector<void*>& buffers, cudaStream_t stream) {
  execute(p, buffers, stream);
}

void CudnnAttention::execute(const Plan&, const std::vector<void*>&, cudaStream_t) { throw RuntimeError(kWhy); }

}  // namespace loupe::rt::backend::cuda
