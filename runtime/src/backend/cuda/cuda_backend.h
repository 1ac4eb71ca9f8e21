// What the rest of the runtime sees of the CUDA backend: whether there are
// GPUs, and a factory for their devices. A build without the CUDA toolkit
// compiles cuda_unavailable.cpp instead, whose device count is 0 and says
// why, so that callers need no #ifdef.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "exec/device_impl.h"

namespace loupe::rt::backend::cuda {

// The CUDA devices this process can use; 0, with the reason in `why`, when
// the build has no CUDA toolkit, no driver is installed or no GPU is
// present. Asked once; later calls return the same answer.
int device_count(std::string* why);

// Creates cuda:`index` (its context, streams, allocator and libraries).
// Throws RuntimeError when it cannot.
exec::DeviceImpl* create_device(int index, uint32_t trace_id);

// Page-locked host memory of `bytes` (cudaHostAlloc, usable by every GPU),
// freed when the last reference goes; nullptr when there is no GPU or the
// driver refuses. PinnedBuffer's memory on a machine with GPUs.
std::shared_ptr<void> allocate_page_locked(size_t bytes);

// The trace's device id for cuda:`index`: apart from the CPU devices' ids.
inline uint32_t trace_id_of(int index) { return 16u + uint32_t(index); }

}  // namespace loupe::rt::backend::cuda
