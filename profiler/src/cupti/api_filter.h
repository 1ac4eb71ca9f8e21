// The CUDA runtime and driver calls whose CUPTI API records are switched
// off: calls that queue no device work and wait for nothing, made many
// times per step by frameworks and by loupe's own runtime (an event
// recorded and queried around every launch, the current device asked for
// and set). Each record costs CUPTI time on the calling thread and a
// buffer slot, and none of them says anything a finding uses: launches,
// copies, memsets and synchronisation calls stay recorded.
// LOUPE_CUPTI_API_FILTER=0 records every call.
#pragma once

#include <cstdint>
#include <span>

namespace loupe::prof::cupti {

std::span<const uint32_t> quiet_runtime_calls();  // CUPTI_RUNTIME_TRACE_CBID_*
std::span<const uint32_t> quiet_driver_calls();   // CUPTI_DRIVER_TRACE_CBID_*

}  // namespace loupe::prof::cupti
