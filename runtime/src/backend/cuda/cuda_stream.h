// A CUDA stream as the runtime's exec::Stream. The runtime numbers the
// work it queues; a CUDA event recorded after each piece marks its end.
// The host learns what finished by querying those events in order, and
// only then runs what was waiting for the work: copying a download out of
// its page-locked staging buffer, letting go of memory the work read,
// recording the device's times for the trace. So an Event that reports
// done() has had all of that happen.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "exec/stream.h"

namespace loupe::rt::backend::cuda {

using EventHandle = std::shared_ptr<CUevent_st>;

// Events of one kind (timing or not), recycled: an event returns to the
// pool when its last holder lets go.
class EventPool {
 public:
  explicit EventPool(bool timing) : timing_(timing) {}
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  EventHandle get();

 private:
  bool timing_;
  std::mutex mu_;
  std::vector<cudaEvent_t> free_;
};

class CudaStream final : public exec::Stream {
 public:
  // Work queued and not yet seen finished, at most; past it the host waits
  // for the oldest, as a GPU's launch queue makes it.
  static constexpr size_t kMaxPending = 4096;

  struct Completion {
    std::shared_ptr<void> keep;  // released once the work has finished
    std::function<void()> then;  // run once the work has finished
  };

  CudaStream(int index, std::string name, EventPool& events);
  ~CudaStream() override;

  int index() const override { return index_; }
  uint64_t submitted() const override { return submitted_.load(std::memory_order_acquire); }
  uint64_t completed() const override;
  // The same, for callers that hold locks (the allocator's): what finished
  // work held is released later, by the next call from a free context.
  uint64_t completed_holding_locks() const;
  void wait_host(uint64_t seq) override;
  void wait_event(const exec::Event& e) override;

  cudaStream_t handle() const { return stream_; }
  const std::string& name() const { return name_; }

  // Marks the end of the work just queued; returns its sequence number.
  uint64_t finish(Completion c);
  // The event marking `seq`; null once it has been seen finished.
  EventHandle event_of(uint64_t seq) const;

 private:
  struct Pending {
    uint64_t seq;
    EventHandle event;
    Completion completion;
  };
  void poll(bool release) const;

  int index_;
  std::string name_;
  EventPool& events_;
  cudaStream_t stream_ = nullptr;

  mutable std::mutex mu_;
  mutable std::deque<Pending> pending_;
  mutable std::vector<std::shared_ptr<void>> graveyard_;
  std::atomic<uint64_t> submitted_{0};
  mutable std::atomic<uint64_t> completed_{0};
};

}  // namespace loupe::rt::backend::cuda
