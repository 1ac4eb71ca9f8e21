// Host phases of the runtime, recorded twice: as loupe host spans, and as
// NVTX ranges so that Nsight Systems shows the same phases. NVTX3 is
// header-only (from the CUDA toolkit) and costs a branch when no tool is
// attached; without the toolkit the NVTX half compiles out.
#pragma once

#include "loupe/prof/record.h"

#if defined(LOUPE_HAVE_NVTX) && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define LOUPE_NVTX 1
#endif

namespace loupe::rt::exec {

class Phase {
 public:
  explicit Phase(const char* name, prof::SpanKind kind = prof::SpanKind::runtime,
                 prof::CallSiteId site = prof::kNoCallSite) {
    prof::span_begin(name, kind, site);
#ifdef LOUPE_NVTX
    nvtxRangePushA(name);
#endif
  }
  ~Phase() {
#ifdef LOUPE_NVTX
    nvtxRangePop();
#endif
    prof::span_end();
  }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
};

}  // namespace loupe::rt::exec
