// What the rest of the runtime sees of the CUDA backend: whether there are
// GPUs, and a factory for their devices. A build without the CUDA toolkit
// compiles cuda_unavailable.cpp instead, whose device count is 0 and says
// why, so that callers need no #ifdef.
#pragma once

#include <cstdint>
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

// The trace's device id for cuda:`index`: apart from the CPU devices' ids.
inline uint32_t trace_id_of(int index) { return 16u + uint32_t(index); }

}  // namespace loupe::rt::backend::cuda
