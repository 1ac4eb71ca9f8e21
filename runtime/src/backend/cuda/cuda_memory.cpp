#include "backend/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>

namespace loupe::rt::backend::cuda {

void* CudaMemory::reserve(size_t bytes) {
  cudaSetDevice(ordinal_);
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear it: running out is an answer, not a fault
    return nullptr;
  }
  return p;
}

void CudaMemory::release(void* ptr, size_t) {
  cudaSetDevice(ordinal_);
  cudaFree(ptr);
}

PinnedPool::~PinnedPool() {
  for (auto& [size, list] : free_)
    for (void* p : list) cudaFreeHost(p);
}

std::shared_ptr<void> PinnedPool::get(size_t bytes, void** data) {
  if (bytes > kMaxBlock) return nullptr;
  size_t size = std::bit_ceil(std::max<size_t>(bytes, 4096));
  void* block = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      cached_ -= size;
    }
  }
  if (block == nullptr) {
    if (cudaHostAlloc(&block, size, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    std::lock_guard lock(mu_);
    blocks_[static_cast<const char*>(block)] = size;
  }
  *data = block;
  return std::shared_ptr<void>(block, [this, size](void* p) { put(p, size); });
}

void PinnedPool::put(void* block, size_t size) {
  {
    std::lock_guard lock(mu_);
    if (cached_ + size <= kMaxCached) {
      free_[size].push_back(block);
      cached_ += size;
      return;
    }
    blocks_.erase(static_cast<const char*>(block));
  }
  cudaFreeHost(block);
}

bool PinnedPool::owns(const void* p) const {
  const char* c = static_cast<const char*>(p);
  std::lock_guard lock(mu_);
  auto it = blocks_.upper_bound(c);
  if (it == blocks_.begin()) return false;
  --it;
  return c < it->first + it->second;
}

}  // namespace loupe::rt::backend::cuda
