// Streams and events: the device's ordered queues of work, as the runtime
// sees them regardless of the backend.
//
// Work queued on a stream runs in order, after the host has moved on. An
// Event marks a point in a stream (everything queued before it); the host
// can wait for it, and another stream can be made to wait for it, which is
// how a kernel on the compute stream waits for an upload on the copy stream.
#pragma once

#include <cstdint>

namespace loupe::rt::exec {

class Stream;

struct Event {
  Stream* stream = nullptr;  // null: already complete
  uint64_t seq = 0;
  bool done() const;
  // Blocks the host until the event completes (the caller records the wait).
  void wait() const;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // The stream's number on its device (0 compute, 1 copy), as in the trace.
  virtual int index() const = 0;
  // Sequence numbers: the last piece of work queued, and the last finished.
  virtual uint64_t submitted() const = 0;
  virtual uint64_t completed() const = 0;
  virtual void wait_host(uint64_t seq) = 0;
  // Later work on this stream waits until `e` completes (device-side).
  virtual void wait_event(const Event& e) = 0;

  Event record() { return Event{this, submitted()}; }
  void synchronize() { wait_host(submitted()); }
};

inline bool Event::done() const { return stream == nullptr || stream->completed() >= seq; }
inline void Event::wait() const {
  if (!done()) stream->wait_host(seq);
}

}  // namespace loupe::rt::exec
