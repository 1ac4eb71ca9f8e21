// The CPU backend's kernels: each runs one KernelSpec over raw buffers
// (inputs then outputs) on the calling stream's worker thread.
#pragma once

#include <vector>

#include "exec/kernel_spec.h"

namespace loupe::rt::backend::cpu {

// One-time setup (BLAS threading); called when a CPU device is created.
void init_kernels();
void run_kernel(const exec::KernelSpec& spec, const std::vector<void*>& buffers);

void run_fused(const exec::FusedKernel& k, const std::vector<void*>& buffers);
void run_matmul(const exec::MatmulKernel& k, const std::vector<void*>& buffers);
void run_gather(const exec::GatherKernel& k, const std::vector<void*>& buffers);
void run_scatter_add(const exec::ScatterAddKernel& k, const std::vector<void*>& buffers);
void run_concat(const exec::ConcatKernel& k, const std::vector<void*>& buffers);
void run_pad(const exec::PadKernel& k, const std::vector<void*>& buffers);
void run_attention(const exec::AttentionKernel& k, const std::vector<void*>& buffers);
void run_attention_bwd(const exec::AttentionBwdKernel& k, const std::vector<void*>& buffers);

// Counter-based random bits: the same (key, index) always gives the same
// 64 bits; neighbouring indices and keys give unrelated ones.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
inline uint64_t random_bits(uint64_t key, uint64_t index) {
  return mix64(mix64(key) ^ (index * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
}

}  // namespace loupe::rt::backend::cpu
