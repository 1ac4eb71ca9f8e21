#include "backend/cpu/cpu_stream.h"

#include <cstdio>
#include <cstring>
#include <exception>

#include "backend/cpu/kernels.h"

namespace loupe::rt::backend::cpu {

CpuStream::CpuStream(uint32_t trace_device, int index, std::string thread_name)
    : trace_device_(trace_device), index_(index), thread_name_(std::move(thread_name)) {
  worker_ = std::thread([this] { run(); });
}

CpuStream::~CpuStream() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

uint64_t CpuStream::enqueue(Task task) {
  std::unique_lock lock(mu_);
  if (queue_.size() >= kMaxQueued) {
    // The host ran too far ahead: block as a GPU launch queue does.
    prof::Scope wait("launch queue full", prof::SpanKind::wait);
    space_cv_.wait(lock, [&] { return queue_.size() < kMaxQueued; });
  }
  bool was_empty = queue_.empty();
  queue_.push_back(std::move(task));
  uint64_t seq = submitted_.fetch_add(1, std::memory_order_acq_rel) + 1;
  lock.unlock();
  if (was_empty) work_cv_.notify_one();
  return seq;
}

void CpuStream::wait_host(uint64_t seq) {
  if (completed_.load(std::memory_order_seq_cst) >= seq) return;
  std::unique_lock lock(done_mu_);
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  done_cv_.wait(lock, [&] { return completed_.load(std::memory_order_seq_cst) >= seq; });
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
}

void CpuStream::wait_event(const exec::Event& e) {
  if (e.done() || e.stream == this) return;
  Task t;
  t.kind = Task::Kind::wait;
  t.name = "wait event";
  t.event = e;
  enqueue(std::move(t));
}

void CpuStream::run() {
  prof::set_thread_name(thread_name_);
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      if (queue_.size() == kMaxQueued - 1) space_cv_.notify_all();
    }
    execute(task);
    task = Task{};  // release what the task held before announcing completion
    completed_.fetch_add(1, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard lock(done_mu_); }
      done_cv_.notify_all();
    }
  }
}

void CpuStream::execute(Task& task) {
  prof::Ticks start = prof::ticks_now();
  prof::DeviceOpKind kind = prof::DeviceOpKind::kernel;
  switch (task.kind) {
    case Task::Kind::kernel: try { run_kernel(*task.spec, task.buffers);
      } catch (const std::exception& e) {
        // A device has no way to raise into the host: say so and go on,
        // as a GPU reports a failed kernel.
        std::fprintf(stderr, "loupe: kernel %s failed on %s: %s\n", task.name, thread_name_.c_str(), e.what());
      }
      break;
    case Task::Kind::copy:
      kind = prof::DeviceOpKind::memcpy;
      if (task.bytes > 0) std::memcpy(task.dst, task.src, task.bytes);
      break;
    case Task::Kind::wait:
      kind = prof::DeviceOpKind::sync;
      task.event.wait();
      break;
  }
  if (prof::capturing()) {
    prof::device_op({.device = trace_device_,
                     .stream = uint32_t(index_),
                     .kind = kind,
                     .copy = task.copy_kind,
                     .name = task.name,
                     .start = start,
                     .end = prof::ticks_now(),
                     .bytes = task.bytes,
                     .correlation = task.correlation});
  }
}

}  // namespace loupe::rt::backend::cpu
