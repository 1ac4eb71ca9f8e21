// What every device records on the host for an operation it queues: the
// call as the host saw it, which the trace links to the device's record of
// the same operation by their correlation id.
#pragma once

#include <cstdint>

#include "exec/stream.h"
#include "loupe/prof/record.h"

namespace loupe::rt::exec {

// A copy's name in the trace, as CUDA tools name them.
inline const char* copy_name(prof::CopyKind kind) {
  switch (kind) {
    case prof::CopyKind::host_to_device: return "memcpy HtoD";
    case prof::CopyKind::device_to_host: return "memcpy DtoH";
    case prof::CopyKind::device_to_device: return "memcpy DtoD";
    case prof::CopyKind::peer_to_peer: return "memcpy PtoP";
    case prof::CopyKind::none:
    case prof::CopyKind::host_to_host: break;
  }
  return "memcpy";
}

// Records the host's call that queued operation `correlation` on `stream`
// of trace device `device`: from `start` until now.
inline void record_launch(const char* name, prof::Ticks start, uint32_t device, const Stream& stream,
                          uint64_t correlation) {
  prof::launch({.name = name,
                .start = start,
                .end = prof::ticks_now(),
                .device = device,
                .stream = uint32_t(stream.index()),
                .correlation = correlation});
}

}  // namespace loupe::rt::exec
