// Turns CUPTI activity records into trace events: kernels, copies and
// memsets become device operations; runtime and driver API records become
// launches (for calls that queue device work), waits (for the
// synchronize calls) or runtime spans; NVTX markers become user spans;
// memory records become memory events with running totals.
//
// Records arrive in buffers, in no guaranteed order between kinds: an API
// call's record can come before or after the kernel it launched, and a
// copy's host-side call is needed to know which thread waited for it. The
// converter keeps what it needs across buffers, bounded, keyed by CUPTI's
// correlation id. Needs only the record layouts (cupti_activity.h), not the
// CUPTI library, so that tests can feed it records built by hand.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "record/external_events.h"

namespace loupe::prof::cupti {

// CUPTI's correlation ids count from 1 in their own space; loupe's runtime
// has its own. CUPTI ids get this bit so the two never collide.
inline constexpr uint64_t kCuptiCorrelationTag = uint64_t(1) << 62;

class ActivityConverter {
 public:
  // Names a runtime (domain 0) or driver (domain 1) API callback id.
  using ApiName = std::function<std::string(bool driver, uint32_t cbid)>;
  explicit ActivityConverter(ApiName api_name) : api_name_(std::move(api_name)) {}

  // Converts one record into `out`; unknown kinds are counted as skipped.
  void convert(const CUpti_Activity* record, detail::ExternalEvents& out);
  // After each buffer: settles driver calls whose runtime call has had a
  // buffer's time to arrive. `final` settles all of them.
  void finish_buffer(detail::ExternalEvents& out, bool final = false);

  // Records the converter could not place, for the trace's meta.
  uint64_t skipped() const { return skipped_; }

 private:
  struct ApiCall {
    int64_t os_tid, start, end;
    std::string name;
    bool synchronous_copy;
  };
  void api(const CUpti_ActivityAPI& a, bool driver, detail::ExternalEvents& out);
  void memcpy(const CUpti_ActivityMemcpy6& m, detail::ExternalEvents& out);
  void marker(const CUpti_ActivityMarker2& m, detail::ExternalEvents& out);
  uint64_t correlation_of(uint32_t cupti_id);

  ApiName api_name_;
  uint64_t skipped_ = 0;
  // External (loupe runtime) correlation ids pushed around launches.
  std::unordered_map<uint32_t, uint64_t> external_;
  // Host calls of copies whose device record has not arrived yet, and
  // device copies whose host call has not.
  std::unordered_map<uint32_t, ApiCall> pending_calls_;
  std::unordered_map<uint32_t, CUpti_ActivityMemcpy6> pending_copies_;
  // Open NVTX ranges by id, and open range count per thread for depths.
  struct OpenMarker {
    int64_t os_tid, start;
    std::string name;
    uint32_t depth;
  };
  std::unordered_map<uint32_t, OpenMarker> open_markers_;
  std::unordered_map<int64_t, uint32_t> open_per_thread_;
  // Device memory in use per device, from allocation records.
  std::unordered_map<uint32_t, int64_t> in_use_;
  // A runtime call (cudaLaunchKernel) makes a driver call (cuLaunchKernel)
  // with the same correlation id, and the driver record comes first. A
  // driver call that queues work waits here: if its runtime call arrives,
  // the runtime record is the launch and the driver call a span; if not
  // (the program uses the driver API directly, as XLA does), it is the
  // launch.
  struct PendingDriver {
    CUpti_ActivityAPI record;
    std::string name;
    uint64_t buffer;
  };
  std::unordered_map<uint32_t, PendingDriver> pending_driver_;
  uint64_t buffer_ = 0;
  void emit_call(const CUpti_ActivityAPI& a, const std::string& name, bool launch, detail::ExternalEvents& out);
};

}  // namespace loupe::prof::cupti
