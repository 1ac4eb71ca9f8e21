// Host phases of the runtime, recorded twice: as loupe host spans, and as
// NVTX ranges in a `loupe` domain so that Nsight Systems shows the same
// phases (coloured by kind: compile, wait, runtime) beside the GPU's work.
// NVTX3 is header-only (from the CUDA toolkit) and costs a branch when no
// tool is attached; without the toolkit the NVTX half compiles out.
#pragma once

#include "loupe/prof/record.h"

#if defined(LOUPE_HAVE_NVTX) && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define LOUPE_NVTX 1
#endif

namespace loupe::rt::exec {

#ifdef LOUPE_NVTX
inline nvtxDomainHandle_t nvtx_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("loupe");
  return domain;
}
#endif

class Phase {
 public:
  explicit Phase(const char* name, prof::SpanKind kind = prof::SpanKind::runtime,
                 prof::CallSiteId site = prof::kNoCallSite) {
    prof::span_begin(name, kind, site);
#ifdef LOUPE_NVTX
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = kind == prof::SpanKind::compile ? 0xffe69f00u : kind == prof::SpanKind::wait ? 0xffd55e00u : 0xff0072b2u;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name;
    nvtxDomainRangePushEx(nvtx_domain(), &a);
#endif
  }
  ~Phase() {
#ifdef LOUPE_NVTX
    nvtxDomainRangePop(nvtx_domain());
#endif
    prof::span_end();
  }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
};

}  // namespace loupe::rt::exec
