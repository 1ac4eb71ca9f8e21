// CUPTI activity records made by hand, as the converter's tests and the fake
// CUPTI (fake_cupti.cpp) hand them to loupe: the fields loupe reads by name,
// every other one zero, as CUPTI leaves the fields a record does not use.
#pragma once

#include <cupti_activity.h>

#include <cstdint>

namespace loupe::test {

// A record as it lies in one of CUPTI's buffers.
template <typename Record>
const CUpti_Activity* as_activity(const Record& r) {
  return reinterpret_cast<const CUpti_Activity*>(&r);
}

// Hands `records` to the converter one after another, as they would lie in
// one of CUPTI's buffers. (A template: the fake CUPTI has no converter.)
template <typename Converter, typename Events, typename... Records>
void convert(Converter& converter, Events& out, const Records&... records) {
  (converter.convert(as_activity(records), out), ...);
}

// A runtime or driver API call (`kind`) made on thread `tid`; `cbid` says which.
inline CUpti_ActivityAPI api_call_record(CUpti_ActivityKind kind, uint32_t cbid, uint32_t correlation, uint64_t start,
                                         uint64_t end, uint32_t tid) {
  return {.kind = kind, .cbid = cbid, .start = start, .end = end, .threadId = tid, .correlationId = correlation};
}

// A kernel that ran on device 0.
inline CUpti_ActivityKernel10 kernel_record(uint32_t correlation, uint64_t start, uint64_t end, uint32_t stream,
                                            const char* name) {
  return {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
          .start = start,
          .end = end,
          .deviceId = 0,
          .streamId = stream,
          .correlationId = correlation,
          .name = name};
}

// The start or the end (`flag`) of NVTX range `id` on thread `tid`; a null
// `domain` is NVTX's default one.
inline CUpti_ActivityMarker2 marker_record(uint32_t id, CUpti_ActivityFlag flag, uint64_t time, uint32_t tid,
                                           const char* name, const char* domain) {
  return {.kind = CUPTI_ACTIVITY_KIND_MARKER,
          .flags = flag,
          .timestamp = time,
          .id = id,
          .objectKind = CUPTI_ACTIVITY_OBJECT_THREAD,
          .objectId = {.pt = {.threadId = tid}},
          .name = name,
          .domain = domain};
}

// Ties CUPTI's correlation id to another profiler's id, as a runtime that
// pushes its own ids (loupe's does) makes CUPTI record.
inline CUpti_ActivityExternalCorrelation external_correlation_record(uint32_t correlation, uint64_t external_id) {
  return {.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
          .externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
          .externalId = external_id,
          .correlationId = correlation};
}

}  // namespace loupe::test
