#include "cupti/activity_converter.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace loupe::prof::cupti {

namespace {

// Pending maps hold at most this many entries: a record whose partner
// never comes must not grow memory without bound.
constexpr size_t kMaxPending = 1u << 16;

std::string demangle(const char* name) {
  if (name == nullptr) return "?";
  if (std::strncmp(name, "_Z", 2) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

CopyKind copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::host_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::device_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return CopyKind::device_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::host_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::peer_to_peer;
    default: return CopyKind::none;  // a byte from CUPTI: UNKNOWN, or a kind newer than this list
  }
}

const char* copy_name(CopyKind k) {
  switch (k) {
    case CopyKind::host_to_device: return "Memcpy HtoD";
    case CopyKind::device_to_host: return "Memcpy DtoH";
    case CopyKind::device_to_device: return "Memcpy DtoD";
    case CopyKind::host_to_host: return "Memcpy HtoH";
    case CopyKind::peer_to_peer: return "Memcpy PtoP";
    case CopyKind::none: return "Memcpy";
  }
  return "Memcpy";
}

// The host side of a copy: pageable memory makes it synchronous on CUDA.
HostMemory host_memory_of(const CUpti_ActivityMemcpy6& m) {
  CopyKind k = copy_kind(m.copyKind);
  uint8_t host = k == CopyKind::device_to_host ? m.dstKind : m.srcKind;
  if (host == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) return HostMemory::pageable;
  if (host == CUPTI_ACTIVITY_MEMORY_KIND_PINNED) return HostMemory::pinned;
  return HostMemory::unknown;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// API calls that queue device work, so that their records are launches.
bool queues_work(const std::string& name) {
  return contains(name, "Launch") || contains(name, "Memcpy") || contains(name, "Memset") || contains(name, "memcpy") ||
         contains(name, "memset");
}

bool is_synchronize(const std::string& name) { return contains(name, "Synchronize"); }

}  // namespace

uint64_t ActivityConverter::correlation_of(uint32_t cupti_id) {
  auto it = external_.find(cupti_id);
  if (it == external_.end()) return kCuptiCorrelationTag | cupti_id;
  uint64_t id = it->second;
  external_.erase(it);
  return id;
}

void ActivityConverter::convert(const CUpti_Activity* record, detail::ExternalEvents& out) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = *reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      out.ops.push_back({k.deviceId, k.streamId, int64_t(k.start), int64_t(k.end), DeviceOpKind::kernel,
                         demangle(k.name), 0, CopyKind::none, correlation_of(k.correlationId)});
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: memcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record), out); return;
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      out.ops.push_back({m.deviceId, m.streamId, int64_t(m.start), int64_t(m.end), DeviceOpKind::memset, "Memset",
                         int64_t(m.bytes), CopyKind::none, correlation_of(m.correlationId)});
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), false, out); return;
    case CUPTI_ACTIVITY_KIND_DRIVER: api(*reinterpret_cast<const CUpti_ActivityAPI*>(record), true, out); return;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (external_.size() < kMaxPending) external_[e.correlationId] = e.externalId;
      return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: marker(*reinterpret_cast<const CUpti_ActivityMarker2*>(record), out); return;
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemory4*>(record);
      if (m.memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) return;
      bool alloc = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
      bool release = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
      if (!alloc && !release) return;
      // What CUPTI sees is memory taken from the device (cudaMalloc): for a
      // program without a caching allocator that is also what it uses.
      int64_t& in_use = in_use_[m.deviceId];
      in_use += alloc ? int64_t(m.bytes) : -int64_t(m.bytes);
      out.memory.push_back({m.deviceId, int64_t(m.timestamp), alloc ? MemoryEventKind::alloc : MemoryEventKind::free,
                            int64_t(m.bytes), m.address, in_use, in_use});
      return;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& o = *reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
      if (o.objectKind != CUPTI_ACTIVITY_OBJECT_THREAD) return;
      out.spans.push_back(
          {int64_t(o.objectId.pt.threadId), int64_t(o.start), int64_t(o.end), "CUPTI overhead", SpanKind::runtime, 0});
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      // The host-side waits are the synchronize API calls themselves, which
      // carry the thread; these records would count each wait twice.
      return;
    default:  // CUPTI's enum, not loupe's: the many kinds loupe does not read are counted, not named
      ++skipped_;
      ++out.skipped;
      return;
  }
}

void ActivityConverter::api(const CUpti_ActivityAPI& a, bool driver, detail::ExternalEvents& out) {
  std::string name = api_name_(driver, a.cbid);
  int64_t tid = int64_t(a.threadId);
  // A copy's host call: joined with its device record for the transfer.
  // Only the outermost call counts (the runtime's, when there is one). A
  // copy made inside a loupe runtime launch (an external id was pushed) is
  // a transfer the runtime records itself, with its call site.
  const bool external = external_.count(a.correlationId) != 0;
  if (contains(name, "emcpy") && !external && !(driver && pending_calls_.count(a.correlationId))) {
    ApiCall call{tid, int64_t(a.start), int64_t(a.end), name, !contains(name, "Async")};
    auto copy = pending_copies_.find(a.correlationId);
    if (copy != pending_copies_.end()) {
      const CUpti_ActivityMemcpy6& m = copy->second;
      out.copies.push_back({tid, call.start, call.end, m.deviceId, copy_kind(m.copyKind), int64_t(m.bytes),
                            call.synchronous_copy || host_memory_of(m) == HostMemory::pageable, host_memory_of(m),
                            kCuptiCorrelationTag | a.correlationId});
      pending_copies_.erase(copy);
    } else if (pending_calls_.size() < kMaxPending) {
      pending_calls_[a.correlationId] = call;
    }
  }
  if (!queues_work(name)) {
    out.spans.push_back(
        {tid, int64_t(a.start), int64_t(a.end), name, is_synchronize(name) ? SpanKind::wait : SpanKind::runtime, 0});
    return;
  }
  if (driver) {
    if (pending_driver_.size() < kMaxPending) pending_driver_[a.correlationId] = {a, name, buffer_};
    return;
  }
  auto inner = pending_driver_.find(a.correlationId);
  if (inner != pending_driver_.end()) {
    emit_call(inner->second.record, inner->second.name, false, out);
    pending_driver_.erase(inner);
  }
  emit_call(a, name, true, out);
}

// A call that queues work is the launch of its device operation, unless the
// loupe runtime recorded that launch itself (it pushed an external id).
void ActivityConverter::emit_call(const CUpti_ActivityAPI& a, const std::string& name, bool launch,
                                  detail::ExternalEvents& out) {
  int64_t tid = int64_t(a.threadId);
  if (launch && !external_.count(a.correlationId)) {
    out.launches.push_back({tid, int64_t(a.start), int64_t(a.end), name, 0, 0, kCuptiCorrelationTag | a.correlationId});
  } else {
    out.spans.push_back({tid, int64_t(a.start), int64_t(a.end), name, SpanKind::runtime, 0});
  }
}

void ActivityConverter::finish_buffer(detail::ExternalEvents& out, bool final) {
  for (auto it = pending_driver_.begin(); it != pending_driver_.end();) {
    if (final || it->second.buffer < buffer_) {
      emit_call(it->second.record, it->second.name, true, out);
      it = pending_driver_.erase(it);
    } else {
      ++it;
    }
  }
  ++buffer_;
}

void ActivityConverter::memcpy(const CUpti_ActivityMemcpy6& m, detail::ExternalEvents& out) {
  CopyKind k = copy_kind(m.copyKind);
  const bool external = external_.count(m.correlationId) != 0;  // the runtime records the transfer
  out.ops.push_back({m.deviceId, m.streamId, int64_t(m.start), int64_t(m.end), DeviceOpKind::memcpy, copy_name(k),
                     int64_t(m.bytes), k, correlation_of(m.correlationId)});
  if (external || (k != CopyKind::host_to_device && k != CopyKind::device_to_host)) return;
  auto call = pending_calls_.find(m.correlationId);
  if (call != pending_calls_.end()) {
    const ApiCall& c = call->second;
    out.copies.push_back({c.os_tid, c.start, c.end, m.deviceId, k, int64_t(m.bytes),
                          c.synchronous_copy || host_memory_of(m) == HostMemory::pageable, host_memory_of(m),
                          kCuptiCorrelationTag | m.correlationId});
    pending_calls_.erase(call);
  } else if (pending_copies_.size() < kMaxPending) {
    pending_copies_[m.correlationId] = m;
  }
}

void ActivityConverter::marker(const CUpti_ActivityMarker2& m, detail::ExternalEvents& out) {
  if (m.objectKind != CUPTI_ACTIVITY_OBJECT_THREAD) return;
  // The loupe runtime's own phases: it records them as host spans already.
  if (m.domain != nullptr && std::strcmp(m.domain, "loupe") == 0) return;
  int64_t tid = int64_t(m.objectId.pt.threadId);
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    out.spans.push_back(
        {tid, int64_t(m.timestamp), int64_t(m.timestamp), m.name ? m.name : "", SpanKind::user, open_per_thread_[tid]});
    return;
  }
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    if (open_markers_.size() >= kMaxPending) return;
    uint32_t& depth = open_per_thread_[tid];
    open_markers_[m.id] = {tid, int64_t(m.timestamp), m.name ? m.name : "", depth++};
    return;
  }
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_markers_.find(m.id);
    if (it == open_markers_.end()) return;
    const OpenMarker& o = it->second;
    out.spans.push_back({o.os_tid, o.start, int64_t(m.timestamp), o.name, SpanKind::user, o.depth});
    uint32_t& depth = open_per_thread_[o.os_tid];
    if (depth > 0) --depth;
    open_markers_.erase(it);
  }
}

}  // namespace loupe::prof::cupti
