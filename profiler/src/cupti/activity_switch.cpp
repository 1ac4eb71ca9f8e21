#include "cupti/activity_switch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>

#include "cupti/api_filter.h"
#include "loupe/prof/clock.h"

namespace loupe::prof::cupti {

namespace {

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_DEVICE,          CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,          CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,         CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_OVERHEAD,        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_MARKER,
};

struct State {
  std::mutex mu;
  bool callbacks_registered = false;
  bool on = false;
  uint64_t switched_on = 0;
};

State& state() {
  static auto* s = new State;  // CUPTI may call back until exit
  return *s;
}

bool knob(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : fmt::format("CUPTI error {}", int(r));
}

uint64_t CUPTIAPI monotonic_timestamp() { return uint64_t(monotonic_ns()); }

// After the kinds: enabling CUPTI_ACTIVITY_KIND_RUNTIME or _DRIVER resets
// the per-call settings. A call id this CUPTI does not know is skipped.
void quiet_api_calls() {
  for (uint32_t cbid : quiet_runtime_calls()) cuptiActivityEnableRuntimeApi(cbid, 0);
  for (uint32_t cbid : quiet_driver_calls()) cuptiActivityEnableDriverApi(cbid, 0);
}

CUptiResult enable_kinds() {
  CUptiResult r = CUPTI_SUCCESS;
  size_t enabled = 0;
  for (; r == CUPTI_SUCCESS && enabled < std::size(kKinds); ++enabled) {
    r = cuptiActivityEnable(kKinds[enabled]);
    // Older drivers lack some kinds; what is there is still worth having.
    if (r == CUPTI_ERROR_NOT_COMPATIBLE || r == CUPTI_ERROR_INVALID_KIND) r = CUPTI_SUCCESS;
  }
  if (r != CUPTI_SUCCESS) {
    for (size_t i = 0; i < enabled; ++i) cuptiActivityDisable(kKinds[i]);
  }
  return r;
}

}  // namespace

const Knobs& knobs() {
  static const Knobs k{.keep_on = knob("LOUPE_CUPTI_KEEP_ON"),
                       .api_filter = knob("LOUPE_CUPTI_API_FILTER"),
                       .buffer_pool = knob("LOUPE_CUPTI_BUFFER_POOL")};
  return k;
}

bool switch_on(CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed,
               std::string* why_not) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.on) return true;
  CUptiResult r = CUPTI_SUCCESS;
  if (!s.callbacks_registered) {
    // The timestamp source must be set before any activity is enabled.
    r = cuptiActivityRegisterTimestampCallback(monotonic_timestamp);
    if (r == CUPTI_SUCCESS) r = cuptiActivityRegisterCallbacks(requested, completed);
    s.callbacks_registered = r == CUPTI_SUCCESS;
  }
  if (r == CUPTI_SUCCESS) r = enable_kinds();
  if (r != CUPTI_SUCCESS) {
    if (why_not) {
      *why_not = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                     ? "another tool (Nsight Systems or Nsight Compute?) already holds CUPTI"
                     : "CUPTI is unavailable: " + result_text(r);
    }
    return false;
  }
  if (knobs().api_filter) quiet_api_calls();
  s.on = true;
  ++s.switched_on;
  return true;
}

void capture_stopped() {
  if (knobs().keep_on) return;
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.on) return;
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  s.on = false;
}

uint64_t times_switched_on() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.switched_on;
}

}  // namespace loupe::prof::cupti
