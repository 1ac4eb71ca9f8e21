// A small workload recorded through the record API alone: a host thread
// that runs training steps and a worker thread that plays a device stream,
// executing "kernels" (busy loops) it is handed through a queue. It shows
// what a capture records and is what `make demo` runs.
//
//   record_workload --out trace.db [--steps N]
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "loupe/prof/capture.h"
#include "loupe/prof/record.h"

namespace prof = loupe::prof;

namespace {

void spin_for(std::chrono::microseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// A stream: kernels run one after another on a worker thread.
class FakeStream {
 public:
  FakeStream() : worker_([this] { run(); }) {}
  ~FakeStream() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  void launch(const char* name, std::chrono::microseconds work) {
    uint64_t corr = prof::next_correlation_id();
    prof::Ticks t0 = prof::ticks_now();
    {
      std::lock_guard lock(mu_);
      queue_.push_back({name, work, corr});
    }
    cv_.notify_all();
    prof::launch({.name = name, .start = t0, .end = prof::ticks_now(), .device = 0, .stream = 0, .correlation = corr});
  }
  void synchronize() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

 private:
  struct Kernel {
    const char* name;
    std::chrono::microseconds work;
    uint64_t correlation;
  };
  void run() {
    prof::set_thread_name("device 0 stream 0");
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Kernel k = queue_.front();
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      prof::Ticks start = prof::ticks_now();
      spin_for(k.work);
      prof::device_op({.device = 0,
                       .stream = 0,
                       .name = k.name,
                       .start = start,
                       .end = prof::ticks_now(),
                       .correlation = k.correlation});
      lock.lock();
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<Kernel> queue_;
  bool busy_ = false, done_ = false;
  std::thread worker_;
};

// The compile of step `step`: the first, the ragged last batch of each
// "epoch" and the one after it miss the cache; the others hit.
void compile_step(int step, const char* signature, const char* ragged) {
  bool last_batch = step % 10 == 9;
  prof::Ticks c0 = prof::ticks_now();
  bool miss = step == 0 || last_batch || step % 10 == 0;
  if (miss) {
    prof::Scope compiling("compile", prof::SpanKind::compile);
    spin_for(std::chrono::microseconds(3000));
  }
  prof::compile({.function = "train_step",
                 .signature = last_batch ? ragged : signature,
                 .kind = miss ? prof::CompileKind::miss : prof::CompileKind::hit,
                 .reason = step == 0    ? "first compile"
                           : last_batch ? "arg 0 `x`: now f32[17,128], before f32[64,128]"
                           : miss       ? "arg 0 `x`: now f32[64,128], before f32[17,128]"
                                        : "",
                 .start = c0,
                 .end = prof::ticks_now()});
}

void memory(prof::MemoryEventKind kind, int64_t allocated) {
  prof::memory_event(
      {.device = 0, .kind = kind, .bytes = 1 << 20, .allocated = allocated, .reserved = int64_t(8) << 20});
}

// Forward: six kernels, each allocating 1 MiB; backward: six more, each
// freeing one.
void forward_and_backward(FakeStream& stream, int64_t& allocated) {
  {
    prof::Scope fwd("forward");
    for (int k = 0; k < 6; ++k) {
      allocated += 1 << 20;
      memory(prof::MemoryEventKind::alloc, allocated);
      stream.launch(k % 2 ? "matmul" : "fused_elementwise", std::chrono::microseconds(300 + 100 * k));
    }
  }
  prof::Scope bwd("backward");
  for (int k = 0; k < 6; ++k) {
    stream.launch("matmul_grad", std::chrono::microseconds(400));
    allocated -= 1 << 20;
    memory(prof::MemoryEventKind::free, allocated);
  }
}

// loss.item(): wait for the stream, then read 4 bytes back.
void read_loss(FakeStream& stream, prof::CallSiteId read_back) {
  prof::Ticks t0 = prof::ticks_now();
  {
    prof::Scope wait("synchronize", prof::SpanKind::wait);
    stream.synchronize();
  }
  prof::transfer({.start = t0,
                  .end = prof::ticks_now(),
                  .device = 0,
                  .direction = prof::CopyKind::device_to_host,
                  .host_memory = prof::HostMemory::pageable,
                  .synchronous = true,
                  .implicit = true,
                  .bytes = 4,
                  .callsite = read_back});
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = "trace.db";
  int steps = 40;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: record_workload [--out FILE] [--steps N]\n");
      return 2;
    }
  }
  prof::Capture capture({.path = out, .producer = "record_workload"});
  if (!capture.ok()) return 1;
  prof::register_device(
      {.id = 0, .name = "simulated device", .kind = prof::DeviceKind::cpu, .memory_capacity = int64_t(1) << 30});
  prof::register_stream(0, 0, "compute");
  prof::set_thread_name("main");
  const prof::CallSiteId read_back = prof::callsite();
  const char* signature = prof::intern("f32[64,128]");
  const char* ragged = prof::intern("f32[17,128]");
  int64_t allocated = 0;
  {
    FakeStream stream;
    for (int step = 0; step < steps; ++step) {
      prof::StepScope s(step);
      prof::Scope scope("train_step");
      compile_step(step, signature, ragged);
      forward_and_backward(stream, allocated);
      read_loss(stream, read_back);
      prof::counter("loss", 2.0 / (1 + step));
    }
  }
  capture.stop();
  prof::CaptureStats st = capture.stats();
  std::printf("recorded %llu events into %s (%llu dropped)\n", (unsigned long long)st.recorded, out.c_str(),
              (unsigned long long)st.dropped);
  return st.error.empty() ? 0 : 1;
}
