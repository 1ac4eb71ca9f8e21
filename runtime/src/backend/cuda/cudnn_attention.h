// cuDNN's fused scaled-dot-product attention (FlashAttention-style kernels
// NVIDIA tunes for each GPU), called through the cuDNN frontend's graph
// API. The CUDA device runs attention(..., fused) with it where cuDNN takes
// the case (f16 and bf16, the head dimensions cuDNN accepts on this GPU,
// loupe's causal mask), and with its own kernel (attention_codegen.cpp)
// everywhere else; the kernel's name in the trace ends in " [cuDNN]" when
// cuDNN ran it.
//
// cuDNN is loaded at run time, like cuBLAS and NVRTC, so a build or a
// machine without it runs loupe's kernel. LOUPE_CUDNN=0 switches it off.
// loupe's forward pass saves no softmax statistics, so the backward pass
// runs cuDNN's forward again for them (as loupe's own backward recomputes
// them), then cuDNN's backward.
//
// Built from cudnn_attention.cpp, the one file that includes the frontend,
// when scripts/setup installed its headers; else from cudnn_unavailable.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "exec/kernel_spec.h"

namespace loupe::rt::backend::cuda {

// Whether the user switched cuDNN off (LOUPE_CUDNN=0).
inline bool cudnn_switched_off() {
  const char* env = std::getenv("LOUPE_CUDNN");
  return env != nullptr && std::strcmp(env, "0") == 0;
}

// Why cuDNN's attention cannot run `k` (or, when `backward`, its gradient)
// on a GPU of compute capability `sm` (major * 10 + minor): loupe's own
// rules, then the frontend's validation of the graph; empty when it can.
// Needs no GPU (it loads cuDNN). A GPU may still turn a validated graph
// down when its plans are built (CudnnAttention::plan says why).
std::string cudnn_attention_rejects(const exec::AttentionKernel& k, bool backward, int sm);

// cuDNN on one GPU: its handle and the plans built for it.
class CudnnAttention {
 public:
  // Loads cuDNN and creates a handle on the current device, for a GPU of
  // compute capability `sm`. Throws RuntimeError saying why it cannot.
  explicit CudnnAttention(int sm);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // What runs one attention kernel: built once per shape (cuDNN may
  // compile kernels for it, which takes from milliseconds to a second).
  struct Plan;
  // The plan for `k` (its gradient when `backward`), or null with the
  // reason in `why` when cuDNN does not take it. Thread-safe.
  std::shared_ptr<const Plan> plan(const exec::AttentionKernel& k, bool backward, std::string* why);
  // The scratch buffer `p` needs (statistics, workspace), in bytes.
  static size_t scratch_bytes(const Plan& p);
  // Queues `p` on `stream`. `buffers` are the kernel's (q, k, v, o; or q,
  // k, v, o, do, dq|dk|dv) and then the scratch buffer. Thread-safe.
  // Throws RuntimeError when cuDNN fails.
  void run(const Plan& p, const std::vector<void*>& buffers, cudaStream_t stream);

  struct State;

 private:
  std::shared_ptr<Plan> build_plan(const exec::AttentionKernel& k, bool backward, std::string* why);
  void execute(const Plan& p, const std::vector<void*>& buffers, cudaStream_t stream);

  std::unique_ptr<State> state_;
};

}  // namespace loupe::rt::backend::cuda
