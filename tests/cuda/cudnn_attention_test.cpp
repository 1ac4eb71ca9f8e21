// Which attention kernels cuDNN's fused attention takes, decided without a
// GPU: the cuDNN graph is built for a fixed compute capability and
// validated by the frontend. The expected answers are cuDNN's documented
// limits for its fused flash attention (f16/bf16, head dimensions a
// multiple of 8, sm_80 or newer, the backward pass's head dimension at most
// 128 on sm_80 and 256 on sm_90) and loupe's own rules (f32 and empty
// kernels stay on loupe's kernel; a causal mask with more queries than keys
// leaves rows with no key, which loupe defines and cuDNN does not).
#include <gtest/gtest.h>

#include <string>

#include "backend/cuda/cudnn_attention.h"

namespace loupe::test {
namespace {

using rt::backend::cuda::cudnn_attention_rejects;
using rt::exec::AttentionKernel;

AttentionKernel kernel(rt::Dtype dtype, int64_t sq, int64_t sk, int64_t d, int64_t dv, bool causal) {
  AttentionKernel k;
  k.dtype = dtype;
  k.batch = 6;
  k.sq = sq;
  k.sk = sk;
  k.d = d;
  k.dv = dv;
  k.causal = causal;
  k.scale = 0.125f;
  return k;
}

// Skips, with the reason, where this build or machine has no cuDNN.
#define REQUIRE_CUDNN()                                                                            \
  do {                                                                                             \
    std::string why_ = cudnn_attention_rejects(kernel(rt::f16, 64, 64, 64, 64, false), false, 90); \
    if (why_.find("no cuDNN frontend") != std::string::npos || why_.find("cuDNN 9 cannot") == 0 || \
        why_.find("switched off") != std::string::npos)                                            \
      GTEST_SKIP() << why_;                                                                        \
    ASSERT_EQ(why_, "") << "a plain f16 attention on sm_90";                                       \
  } while (0)

TEST(CudnnAttention, TakesHalfPrecisionWithTheHeadDimsItSupports) {
  REQUIRE_CUDNN();
  for (bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    EXPECT_EQ(cudnn_attention_rejects(kernel(rt::bf16, 4096, 4096, 128, 128, true), backward, 90), "");
    EXPECT_EQ(cudnn_attention_rejects(kernel(rt::f16, 100, 130, 64, 32, false), backward, 90), "");
    EXPECT_EQ(cudnn_attention_rejects(kernel(rt::bf16, 128, 128, 64, 64, false), backward, 80), "");
    // Fewer queries than keys under a causal mask: cuDNN's bottom-right
    // diagonal, which is loupe's.
    EXPECT_EQ(cudnn_attention_rejects(kernel(rt::f16, 100, 130, 64, 64, true), backward, 90), "");
  }
  EXPECT_EQ(cudnn_attention_rejects(kernel(rt::f16, 128, 128, 256, 256, false), true, 90), "");
}

TEST(CudnnAttention, LeavesTheRestToLoupesKernelAndSaysWhy) {
  REQUIRE_CUDNN();
  auto rejects = [](const AttentionKernel& k, bool backward, int sm, const std::string& because) {
    std::string why = cudnn_attention_rejects(k, backward, sm);
    EXPECT_NE(why.find(because), std::string::npos) << "got \"" << why << "\", expected it to name: " << because;
  };
  rejects(kernel(rt::f32, 128, 128, 64, 64, false), false, 90, "f16 and bf16, not f32");
  rejects(kernel(rt::f32, 128, 128, 64, 64, false), true, 90, "f16 and bf16, not f32");
  rejects(kernel(rt::f16, 128, 128, 100, 100, false), false, 90, "multiple of 8");
  rejects(kernel(rt::f16, 128, 128, 256, 256, false), true, 80, "less than or equal to 128");
  rejects(kernel(rt::f16, 128, 128, 64, 64, false), false, 75, "SM80");
  rejects(kernel(rt::f16, 130, 100, 64, 64, true), false, 90, "more queries (130) than keys (100)");
  rejects(kernel(rt::bf16, 0, 100, 64, 64, false), false, 90, "empty");
}

}  // namespace
}  // namespace loupe::test
