// CUPTI's activity recording, switched on once per process. Switching it
// on is what costs most: CUPTI instruments the context, and the first
// launches after it pay for that (Kineto discards its first buffers for
// the same reason). So recording stays on from the first capture to the
// end of the process, and what it records while no capture is attached is
// dropped as its buffers complete (cupti_collector.cpp).
//
// Each part can be switched off from the environment, read once, so that
// one GPU run can measure what each is worth:
//   LOUPE_CUPTI_KEEP_ON=0      on at each capture's start, off at its stop
//   LOUPE_CUPTI_API_FILTER=0   every runtime and driver call recorded
//                              (api_filter.h)
//   LOUPE_CUPTI_BUFFER_POOL=0  each activity buffer allocated and freed
//                              (buffer_pool.h)
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <string>

namespace loupe::prof::cupti {

struct Knobs {
  bool keep_on = true;
  bool api_filter = true;
  bool buffer_pool = true;
};
const Knobs& knobs();

// Registers the timestamp source and the buffer callbacks (the first time)
// and enables the activity kinds (when they are off). False, with why,
// when CUPTI refused; nothing is left enabled then.
bool switch_on(CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed,
               std::string* why_not);
// At a capture's stop: disables the kinds unless they are kept on.
void capture_stopped();

// How many times the activity kinds were enabled in this process.
uint64_t times_switched_on();

}  // namespace loupe::prof::cupti
