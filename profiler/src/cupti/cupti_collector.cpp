#include <cupti.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "cupti/activity_converter.h"
#include "cupti/activity_switch.h"
#include "cupti/adoption.h"
#include "cupti/buffer_pool.h"
#include "loupe/prof/cupti.h"

namespace loupe::prof {

namespace {

std::string api_name(bool driver, uint32_t cbid) {
  const char* name = nullptr;
  cuptiGetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name);
  return name ? name : fmt::format("{} api {}", driver ? "driver" : "runtime", cbid);
}

}  // namespace

struct CuptiCollector::Impl {
  CuptiOptions options;
  pid_t owner = ::getpid();  // a forked child's copy has no flusher, and CUDA is not the child's
  std::mutex mu;             // the converter: CUPTI calls back from its own threads
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
          batch.devices.push_back({.id = d.id,
                                   .name = d.name ? d.name : "GPU",
                                   .kind = DeviceKind::cuda,
                                   .memory_capacity = int64_t(d.globalMemorySize),
                                   .copy_bandwidth = 0});
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

// CUPTI's callbacks are plain functions: they reach the collector attached
// here, if any. `g_attach_mu` is held while a buffer is handed to it, so
// that a collector is never destroyed under a CUPTI thread.
std::mutex g_attach_mu;
CuptiCollector::Impl* g_attached = nullptr;
std::atomic<uint64_t> g_dropped{0};

cupti::BufferPool& buffers() {
  static auto* pool = new cupti::BufferPool(cupti::knobs().buffer_pool);  // CUPTI may call back until exit
  return *pool;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = buffers().take();
  *size = *buffer ? cupti::BufferPool::kBufferBytes : 0;
  *max_records = 0;
}

uint64_t count_records(uint8_t* buffer, size_t valid) {
  uint64_t n = 0;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++n;
  return n;
}

// Records made while no capture is attached (CUPTI stays on between
// captures) are dropped here.
void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard lock(g_attach_mu);
    if (g_attached != nullptr) g_attached->completed(buffer, valid);
    else if (buffer != nullptr) g_dropped.fetch_add(count_records(buffer, valid), std::memory_order_relaxed);
  }
  buffers().give_back(buffer);
}

bool attached() {
  std::lock_guard lock(g_attach_mu);
  return g_attached != nullptr;
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

void CuptiCollector::leave_memory_to_framework(uint32_t cuda_device, bool on) {
  cupti::adoption().leave_memory(cuda_device, on);
}

void CuptiCollector::adopt_stream(uint32_t cuda_device, void* cuda_stream, uint32_t trace_stream) {
  {
    std::lock_guard lock(g_adopt_mu);
    g_unresolved.push_back({cuda_device, cuda_stream, trace_stream});
  }
  if (attached()) resolve_streams();
}

CuptiCollector::CuptiCollector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<CuptiCollector> CuptiCollector::start(const CuptiOptions& options, std::string* why_not) {
  if (attached()) {
    if (why_not) *why_not = "a CUPTI collector is already running in this process";
    return nullptr;
  }
  if (!cupti::switch_on(buffer_requested, buffer_completed, why_not)) return nullptr;
  // What CUPTI recorded before this capture began (it stays on between
  // captures) is not this capture's: flushed out, and dropped, first.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  Impl* raw = impl.get();
  {
    std::lock_guard lock(g_attach_mu);
    g_attached = raw;
  }
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
  if (::getpid() != impl_->owner) {
    // The parent's collector, in a forked child: kept as it is (and
    // reachable), never stopped or destroyed.
    [[maybe_unused]] static Impl* volatile inherited = nullptr;  // volatile: the store is kept
    inherited = impl_.release();
    return;
  }
  {
    std::lock_guard lock(impl_->flush_mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->flusher.join();
  // CUPTI calls buffer_completed on this thread for what it holds.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::lock_guard lock(g_attach_mu);
    g_attached = nullptr;
  }
  cupti::capture_stopped();
  detail::ExternalEvents rest;
  {
    std::lock_guard lock(impl_->mu);
    impl_->converter.finish_buffer(rest, true);
  }
  cupti::adoption().apply(rest);
  if (!rest.empty()) detail::submit_external(std::move(rest));
}

CuptiStats CuptiCollector::stats() {
  return {.times_switched_on = cupti::times_switched_on(),
          .buffers_allocated = buffers().allocated(),
          .buffers_live = buffers().live(),
          .records_dropped = g_dropped.load(std::memory_order_relaxed)};
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
