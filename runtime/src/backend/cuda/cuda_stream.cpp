#include "backend/cuda/cuda_stream.h"

#include <cstdio>

#include "backend/cuda/cuda_check.h"
#include "loupe/prof/record.h"

namespace loupe::rt::backend::cuda {

EventPool::~EventPool() {
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
}

EventHandle EventPool::get() {
  cudaEvent_t e = nullptr;
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    }
  }
  if (e == nullptr)
    check(cudaEventCreateWithFlags(&e, timing_ ? cudaEventDefault : cudaEventDisableTiming), "cudaEventCreate");
  return EventHandle(e, [this](cudaEvent_t ev) {
    std::lock_guard lock(mu_);
    free_.push_back(ev);
  });
}

CudaStream::CudaStream(int index, std::string name, EventPool& events)
    : index_(index), name_(std::move(name)), events_(events) {
  // Non-blocking: the legacy default stream must not serialise with ours.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaStream::~CudaStream() {
  // Devices live until the process exits, when the driver may already be
  // gone: nothing here may throw.
  cudaStreamSynchronize(stream_);
  poll(true);
  cudaStreamDestroy(stream_);
}

uint64_t CudaStream::completed() const {
  poll(true);
  return completed_.load(std::memory_order_acquire);
}

uint64_t CudaStream::completed_holding_locks() const {
  poll(false);
  return completed_.load(std::memory_order_acquire);
}

void CudaStream::poll(bool release) const {
  std::vector<std::shared_ptr<void>> dead;
  {
    std::lock_guard lock(mu_);
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      cudaError_t r = cudaEventQuery(p.event.get());
      if (r == cudaErrorNotReady) break;
      if (r != cudaSuccess && r != cudaErrorCudartUnloading) {
        // A fault in earlier work (it poisons the context): say so once,
        // and let waiters go rather than hang.
        static std::once_flag once;
        std::call_once(once, [&] {
          std::fprintf(stderr, "loupe: CUDA error on stream %s: %s\n", name_.c_str(), cuda_error_text(r).c_str());
        });
      }
      // What waited for the work runs before anyone can see it done.
      if (p.completion.then) p.completion.then();
      dead.push_back(std::move(p.completion.keep));
      uint64_t seq = p.seq;
      pending_.pop_front();
      completed_.store(seq, std::memory_order_release);
    }
    if (!release) {
      for (auto& d : dead) graveyard_.push_back(std::move(d));
      dead.clear();
    } else if (!graveyard_.empty()) {
      for (auto& d : graveyard_) dead.push_back(std::move(d));
      graveyard_.clear();
    }
  }
  // Released outside the lock: dropping a buffer frees it in its allocator.
}

uint64_t CudaStream::finish(Completion c) {
  EventHandle ev = events_.get();
  check(cudaEventRecord(ev.get(), stream_), "cudaEventRecord");
  uint64_t seq;
  EventHandle oldest;
  {
    std::lock_guard lock(mu_);
    seq = submitted_.fetch_add(1, std::memory_order_acq_rel) + 1;
    pending_.push_back({seq, std::move(ev), std::move(c)});
    if (pending_.size() > kMaxPending) oldest = pending_.front().event;
  }
  if (oldest) {
    prof::Scope wait("launch queue full", prof::SpanKind::wait);
    cudaEventSynchronize(oldest.get());
  }
  poll(true);
  return seq;
}

EventHandle CudaStream::event_of(uint64_t seq) const {
  std::lock_guard lock(mu_);
  if (pending_.empty() || seq < pending_.front().seq) return nullptr;
  size_t i = size_t(seq - pending_.front().seq);
  return i < pending_.size() ? pending_[i].event : nullptr;
}

void CudaStream::wait_host(uint64_t seq) {
  if (completed() >= seq) return;
  EventHandle ev = event_of(seq);
  if (ev) cudaEventSynchronize(ev.get());
  poll(true);
}

void CudaStream::wait_event(const exec::Event& e) {
  if (e.stream == this || e.done()) return;
  if (auto* other = dynamic_cast<CudaStream*>(e.stream)) {
    // Device-side: later work on this stream starts after the event.
    if (EventHandle ev = other->event_of(e.seq))
      check(cudaStreamWaitEvent(stream_, ev.get(), 0), "cudaStreamWaitEvent");
    return;
  }
  // Work of another kind of device (the CPU device): the host waits for it.
  prof::Scope wait("wait event", prof::SpanKind::wait);
  e.wait();
}

}  // namespace loupe::rt::backend::cuda
