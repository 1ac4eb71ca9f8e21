// A CPU stream: one worker thread running queued work in order, as a GPU
// runs a CUDA stream. The host returns from enqueue() at once (unless the
// queue is full, as a GPU's launch queue can be), and records how long the
// device took for each piece of work from the worker.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/kernel_spec.h"
#include "exec/stream.h"
#include "loupe/prof/record.h"

namespace loupe::rt::backend::cpu {

struct Task {
  enum class Kind : uint8_t { kernel, copy, wait };
  Kind kind = Kind::kernel;
  const char* name = "";
  uint64_t correlation = 0;
  // kernel
  std::shared_ptr<const exec::KernelSpec> spec;
  std::vector<void*> buffers;
  // copy
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  prof::CopyKind copy_kind = prof::CopyKind::none;
  std::shared_ptr<void> keep_alive;
  // wait
  exec::Event event;
};

class CpuStream final : public exec::Stream {
 public:
  static constexpr size_t kMaxQueued = 4096;

  CpuStream(uint32_t trace_device, int index, std::string thread_name);
  ~CpuStream() override;

  int index() const override { return index_; }
  uint64_t submitted() const override { return submitted_.load(std::memory_order_acquire); }
  uint64_t completed() const override { return completed_.load(std::memory_order_acquire); }
  void wait_host(uint64_t seq) override;
  void wait_event(const exec::Event& e) override;

  // Queues a task; returns its sequence number.
  uint64_t enqueue(Task task);

 private:
  void run();
  void execute(Task& task);

  uint32_t trace_device_;
  int index_;
  std::string thread_name_;

  std::mutex mu_;
  std::condition_variable work_cv_, space_cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  std::atomic<uint64_t> submitted_{0};

  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::atomic<uint64_t> completed_{0};
  std::atomic<int> waiters_{0};

  std::thread worker_;
};

}  // namespace loupe::rt::backend::cpu
