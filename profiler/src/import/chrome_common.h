// Pieces shared by the Chrome-JSON mappings (Kineto, JAX, plain Chrome).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "import/chrome_events.h"
#include "import/imported_trace.h"
#include "import/string_pool.h"

namespace loupe::prof::import {

// Host threads: a loupe thread per (pid, tid) lane that carries host
// events, numbered from 1 in order of first use, named from the trace's
// thread_name / process_name metadata.
class LaneThreads {
 public:
  LaneThreads(const ChromeTrace& raw, StringPool& strings) : raw_(raw), strings_(strings) {}
  uint32_t thread(uint32_t lane);
  void emit(ImportedTrace& out) const;

 private:
  const ChromeTrace& raw_;
  StringPool& strings_;
  std::unordered_map<uint32_t, uint32_t> by_lane_;
  std::vector<uint32_t> lanes_;  // by thread id - 1
  uint32_t last_lane_ = ~0u, last_thread_ = 0;
};

// A host API call (CUDA runtime or driver, HIP, CUPTI callback) before it
// is known whether it launched device work.
struct ApiCall {
  uint32_t thread = 0;
  int64_t start = 0, dur = 0;
  StringId name = 0;
  int64_t correlation = kNone;
  int64_t size = kNone;  // args.size (ROCm copies carry their size only here)
  uint32_t lane = 0;
};

// A device op whose bytes may still come from its API call.
struct PendingOp {
  DeviceOpRow row;
  int64_t bytes = kNone;
  int64_t correlation = kNone;
  HostMemory host_memory = HostMemory::unknown;
  uint32_t lane = 0;
};

inline bool is_flow(const ChromeEvent& e) { return e.ph == 's' || e.ph == 't' || e.ph == 'f'; }
inline bool is_instant(const ChromeEvent& e) { return e.ph == 'i' || e.ph == 'I' || e.ph == 'n'; }
// Why an event cannot become a span or device op (it is not a complete
// event, or its duration is negative), or null when it can.
inline const char* why_not_complete(const ChromeEvent& e) {
  if (e.ph != 'X') return "async events (ph 'b', 'e')";
  if (e.dur < 0) return "events with a negative duration";
  return nullptr;
}

// An instant event of a host lane, as a user instant of its thread.
void add_host_instant(const ChromeEvent& e, LaneThreads& threads, ImportedTrace& out);

// What every Chrome-JSON mapping ends with: the counters, the depth of
// each host span, the threads, what the reader skipped and the count of
// source events.
void finish_mapping(const ChromeTrace& raw, const LaneThreads& threads, ImportedTrace& out);

// A synchronisation record of the source (Kineto's cuda_sync, CUPTI's
// SYNCHRONIZATION activity): what the API call of the same correlation
// waited for. kNone where the source does not say.
struct SyncRecord {
  int64_t correlation = kNone;
  std::optional<SyncKind> kind;  // nullopt: a kind loupe does not know
  int64_t device = kNone;
  int64_t stream = kNone;              // the stream synchronised or made to wait
  int64_t event_stream = kNone;        // the stream the awaited event was recorded on
  int64_t record_correlation = kNone;  // the correlation of the cudaEventRecord that recorded it
};

// Joins API calls to device ops by correlation id: a call that started an
// op becomes a launch (and, for a copy, a transfer), as does a kernel
// launch call whose op the trace lacks (on kUnknownDevice); a call that blocks on
// the device (a *Synchronize, or one a sync record names, but for
// cudaEventQuery, which polls, and cudaStreamWaitEvent, which makes a
// stream wait, not the host) becomes a host span of kind wait; any other
// call a runtime span. Each sync record claimed by a call that waits or
// makes a stream wait becomes a row of `syncs`; the others are counted as
// skipped, with why.
void join_api_calls(const std::vector<ApiCall>& calls, std::vector<PendingOp>& ops,
                    const std::vector<SyncRecord>& sync_records, const StringPool& strings, ImportedTrace& out);

// Moves the pending ops into out.device_ops (unknown bytes become 0).
void emit_device_ops(std::vector<PendingOp>& ops, ImportedTrace& out);

// cudaDeviceSynchronize, cudaStreamSynchronize, cuCtxSynchronize,
// hipEventSynchronize, ...: calls that block until the device catches up.
bool is_sync_call(std::string_view name);
// cudaLaunchKernel, cuLaunchKernel, hipExtModuleLaunchKernel,
// cudaGraphLaunch, ...: calls that queue kernels, launches even when the
// trace lacks their kernels.
bool is_kernel_launch_call(std::string_view name);
// cudaMemcpy, cuMemcpyHtoD_v2, hipMemcpy, hipMemcpyWithStream: copies whose
// call returns only when the copy is done.
bool is_blocking_copy_call(std::string_view name);
// cudaEventQuery, cudaStreamQuery, hipEventQuery: calls that ask whether
// the device is done without waiting for it.
bool is_poll_call(std::string_view name);

// A pid or tid as text ("783658", "Spans").
std::string lane_id_text(LaneId id, const StringPool& strings);
// Its number, if it is one.
inline std::optional<int64_t> lane_number(LaneId id) {
  return id.is_string ? std::nullopt : std::optional<int64_t>(id.value);
}

// Timestamps that read as microseconds since the Unix epoch (after the year
// 2000) are taken as wall-clock time, as Kineto and most tools write them.
void guess_wall_clock(const ChromeTrace& raw, ImportedTrace& out);

// Turns each "B" event and the next "E" event of its lane into one "X"
// event (the "E" is dropped); unmatched ones are counted as skipped.
void complete_begin_end(ChromeTrace& raw);

}  // namespace loupe::prof::import
