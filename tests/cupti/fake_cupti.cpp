// A CUPTI that needs no GPU, for testing the collector's life cycle on
// machines without one: built as libcupti.so.13 and put first on
// LD_LIBRARY_PATH, it stands in for the real one. Records are made by the
// test (fake_cupti.h) while their kind is enabled, kept until a flush, and
// handed over in buffers the collector lends, through its callbacks, as
// CUPTI does; it counts what it was asked. Only what loupe calls is here.
#include "cupti/fake_cupti.h"

#include <cupti.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cupti/activity_records.h"

namespace {

std::recursive_mutex g_mu;  // a flush calls back into the collector, which may ask again
std::set<int> g_enabled_kinds;
std::set<uint32_t> g_quiet_runtime, g_quiet_driver;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
std::vector<std::vector<uint8_t>> g_pending;  // records not yet handed over
std::deque<std::string> g_names;              // kernel names, alive for good as CUPTI's are
FakeCuptiCounts g_counts{};
uint32_t g_correlation = 0;

template <typename T>
void keep(const T& record) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&record);
  g_pending.emplace_back(bytes, bytes + sizeof record);
}

// A buffer is records one after another, each behind its size (8 bytes),
// each padded to 8 bytes.
size_t padded(size_t n) { return (n + 7) & ~size_t(7); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void loupe_fake_cupti_kernel(const char* name, uint64_t start, uint64_t end) {
  std::lock_guard lock(g_mu);
  if (!g_enabled_kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
  keep(loupe::test::kernel_record(++g_correlation, start, end, 7, g_names.emplace_back(name).c_str()));
}

__attribute__((visibility("default"))) void loupe_fake_cupti_api(int driver, uint32_t cbid, uint64_t start,
                                                                 uint64_t end) {
  std::lock_guard lock(g_mu);
  CUpti_ActivityKind kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  if (!g_enabled_kinds.count(kind) || (driver ? g_quiet_driver : g_quiet_runtime).count(cbid)) return;
  keep(loupe::test::api_call_record(kind, cbid, ++g_correlation, start, end, 1));
}

__attribute__((visibility("default"))) void loupe_fake_cupti_counts(FakeCuptiCounts* out) {
  std::lock_guard lock(g_mu);
  *out = g_counts;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "fake CUPTI error";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  static const struct {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
    const char* name;
  } kNames[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, "cudaEventQuery"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, "cudaEventSynchronize"},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, "cuCtxGetCurrent"},
  };
  for (const auto& n : kNames) {
    if (n.domain == domain && n.cbid == cbid) {
      *name = n.name;
      return CUPTI_SUCCESS;
    }
  }
  *name = nullptr;
  return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t at = *record == nullptr ? 0 : size_t(reinterpret_cast<uint8_t*>(*record) - buffer) - 8;
  if (*record != nullptr) {
    uint64_t size = 0;
    std::memcpy(&size, buffer + at, 8);
    at += 8 + padded(size);
  }
  if (at + 8 > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + at + 8);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext, CUstream, uint8_t, uint32_t* id) {
  *id = 7;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc) {
  std::lock_guard lock(g_mu);
  ++g_counts.timestamp_registrations;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  std::lock_guard lock(g_mu);
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::lock_guard lock(g_mu);
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ++g_counts.kernel_kind_enables;
  // Like CUPTI's: enabling a whole API kind resets its per-call settings.
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) g_quiet_runtime.clear();
  if (kind == CUPTI_ACTIVITY_KIND_DRIVER) g_quiet_driver.clear();
  g_enabled_kinds.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::lock_guard lock(g_mu);
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ++g_counts.kernel_kind_disables;
  g_enabled_kinds.erase(kind);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard lock(g_mu);
  if (enable) g_quiet_runtime.erase(cbid);
  else g_quiet_runtime.insert(cbid);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  std::lock_guard lock(g_mu);
  if (enable) g_quiet_driver.erase(cbid);
  else g_quiet_driver.insert(cbid);
  return CUPTI_SUCCESS;
}

// Hands every pending record over, in as many buffers as they need.
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  std::lock_guard lock(g_mu);
  while (!g_pending.empty() && g_request != nullptr) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    g_request(&buffer, &size, &max_records);
    if (buffer == nullptr) return CUPTI_ERROR_OUT_OF_MEMORY;
    size_t valid = 0, taken = 0;
    for (; taken < g_pending.size() && valid + 8 + padded(g_pending[taken].size()) <= size; ++taken) {
      uint64_t n = g_pending[taken].size();
      std::memcpy(buffer + valid, &n, 8);
      std::memcpy(buffer + valid + 8, g_pending[taken].data(), n);
      valid += 8 + padded(n);
    }
    g_pending.erase(g_pending.begin(), g_pending.begin() + long(taken));
    ++g_counts.buffers_completed;
    g_complete(nullptr, 0, buffer, size, valid);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind, uint64_t) {
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind, uint64_t* id) {
  *id = 0;
  return CUPTI_SUCCESS;
}

}  // extern "C"
