// Pinned host memory: which host ranges are page-locked, so that an upload
// can tell a pinned source from a pageable one (as a GPU driver does with
// cudaPointerGetAttributes) and skip the staging copy.
#pragma once

#include <cstddef>
#include <memory>

namespace loupe::rt::exec {

// A pinned allocation of `bytes`; freed when the last reference goes.
std::shared_ptr<void> allocate_pinned(size_t bytes);

// The pinned allocation that holds all of [data, data + bytes), to keep
// alive until a copy from it has run; null when the range is not inside one.
std::shared_ptr<void> pinned_owner(const void* data, size_t bytes);

}  // namespace loupe::rt::exec
