#include <cupti.h>
#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "cupti/activity_converter.h"
#include "cupti/adoption.h"
#include "loupe/prof/clock.h"
#include "loupe/prof/cupti.h"

namespace loupe::prof {

namespace {

constexpr size_t kBufferBytes = 8u << 20;

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_DEVICE,          CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,          CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,         CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_OVERHEAD,        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_MARKER,
};

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : fmt::format("CUPTI error {}", int(r));
}

uint64_t CUPTIAPI monotonic_timestamp() { return uint64_t(monotonic_ns()); }

std::string api_name(bool driver, uint32_t cbid) {
  const char* name = nullptr;
  cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name);
  return name ? name : fmt::format("{} api {}", driver ? "driver" : "runtime", cbid);
}

}  // namespace

struct CuptiCollector::Impl {
  CuptiOptions options;
  std::mutex mu;  // the converter: CUPTI calls back from its own threads
  cupti::ActivityConverter converter{api_name};
  std::thread flusher;
  std::mutex flush_mu;
  std::condition_variable wake;
  bool stopping = false;

  void completed(uint8_t* buffer, size_t valid) {
    detail::ExternalEvents batch;
    {
      std::lock_guard lock(mu);
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
          const auto& d = *reinterpret_cast<const CUpti_ActivityDevice5*>(record);
          batch.devices.push_back({d.id, d.name ? d.name : "GPU", DeviceKind::cuda, int64_t(d.globalMemorySize), 0});
          continue;
        }
        converter.convert(record, batch);
      }
      converter.finish_buffer(batch);
    }
    cupti::adoption().apply(batch);
    if (!batch.empty()) detail::submit_external(std::move(batch));
  }
};

namespace {

// CUPTI's callbacks are plain functions: they reach the one collector here.
std::atomic<CuptiCollector::Impl*> g_active{nullptr};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (CuptiCollector::Impl* impl = g_active.load()) impl->completed(buffer, valid);
  std::free(buffer);
}

// Streams adopted before a collector ran: CUPTI's ids for them are asked
// for once one starts (asking initialises CUPTI, which a process that
// never profiles should not pay for).
struct AdoptedStream {
  uint32_t device;
  void* stream;
  uint32_t trace_stream;
};
std::mutex g_adopt_mu;
std::vector<AdoptedStream> g_unresolved;

void resolve_streams() {
  std::lock_guard lock(g_adopt_mu);
  for (const AdoptedStream& a : g_unresolved) {
    uint32_t id = 0;
    if (cuptiGetStreamIdEx(nullptr, static_cast<CUstream>(a.stream), 0, &id) == CUPTI_SUCCESS)
      cupti::adoption().adopt_stream(a.device, id, a.trace_stream);
  }
  g_unresolved.clear();
}

}  // namespace

void CuptiCollector::adopt_device(uint32_t cuda_device, uint32_t trace_device) {
  cupti::adoption().adopt_device(cuda_device, trace_device);
}

void CuptiCollector::adopt_stream(uint32_t cuda_device, void* cuda_stream, uint32_t trace_stream) {
  {
    std::lock_guard lock(g_adopt_mu);
    g_unresolved.push_back({cuda_device, cuda_stream, trace_stream});
  }
  if (g_active.load() != nullptr) resolve_streams();
}

CuptiCollector::CuptiCollector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<CuptiCollector> CuptiCollector::start(const CuptiOptions& options, std::string* why_not) {
  if (g_active.load() != nullptr) {
    if (why_not) *why_not = "a CUPTI collector is already running in this process";
    return nullptr;
  }
  // The timestamp source must be set before any activity is enabled.
  CUptiResult r = cuptiActivityRegisterTimestampCallback(monotonic_timestamp);
  if (r == CUPTI_SUCCESS) r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  size_t enabled = 0;
  for (; r == CUPTI_SUCCESS && enabled < std::size(kKinds); ++enabled) {
    r = cuptiActivityEnable(kKinds[enabled]);
    // Older drivers lack some kinds; what is there is still worth having.
    if (r == CUPTI_ERROR_NOT_COMPATIBLE || r == CUPTI_ERROR_INVALID_KIND) r = CUPTI_SUCCESS;
  }
  if (r != CUPTI_SUCCESS) {
    for (size_t i = 0; i < enabled; ++i) cuptiActivityDisable(kKinds[i]);
    if (why_not) {
      *why_not = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                     ? "another tool (Nsight Systems or Nsight Compute?) already holds CUPTI"
                     : "CUPTI is unavailable: " + result_text(r);
    }
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  Impl* raw = impl.get();
  g_active.store(raw);
  resolve_streams();
  raw->flusher = std::thread([raw] {
    std::unique_lock lock(raw->flush_mu);
    while (!raw->wake.wait_for(lock, raw->options.flush_interval, [raw] { return raw->stopping; })) {
      cuptiActivityFlushAll(0);
    }
  });
  return std::unique_ptr<CuptiCollector>(new CuptiCollector(std::move(impl)));
}

CuptiCollector::~CuptiCollector() {
  {
    std::lock_guard lock(impl_->flush_mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->flusher.join();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  detail::ExternalEvents rest;
  {
    std::lock_guard lock(impl_->mu);
    impl_->converter.finish_buffer(rest, true);
  }
  cupti::adoption().apply(rest);
  if (!rest.empty()) detail::submit_external(std::move(rest));
  g_active.store(nullptr);
}

void CuptiCollector::flush() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

void CuptiCollector::push_correlation(uint64_t id) {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiCollector::pop_correlation() {
  uint64_t id = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

}  // namespace loupe::prof
