#include "backend/cuda/cuda_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cupti_session.h"
#include "backend/cuda/nvrtc_compiler.h"
#include "exec/buffer.h"
#include "exec/host_records.h"
#include "exec/nvtx.h"
#include "exec/pinned_memory.h"
#include "loupe/prof/cupti.h"
#include "loupe/prof/record.h"

namespace loupe::rt::backend::cuda {

struct CudaDevice::Module {
  cudaLibrary_t library = nullptr;
  std::string target;
  int64_t nvrtc_ns = 0;
};

namespace {

thread_local int t_current_device = -1;

// At exit, before the CUDA runtime tears itself down (this handler is
// registered after the runtime started, so it runs first): let queued work
// finish and hand CUPTI's records to the capture.
void at_exit() {
  for (exec::DeviceImpl* d : exec::live_devices())
    if (d->handle().type == DeviceType::cuda) d->synchronize();
  cupti_session_stop();
}

}  // namespace

CudaDevice::CudaDevice(int ordinal, uint32_t trace_id) : ordinal_(ordinal), trace_id_(trace_id), memory_(ordinal) {
  make_current();
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  arch_ = prop.major * 10 + prop.minor;
  sms_ = std::max(prop.multiProcessorCount, 1);
  name_ = prop.name;
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  std::string base = fmt::format("cuda:{}", ordinal);
  compute_ = std::make_unique<CudaStream>(0, base + " compute", events_);
  copy_ = std::make_unique<CudaStream>(1, base + " copy", events_);
  total_memory_ = int64_t(total);
  allocator_ = std::make_unique<mem::CachingAllocator>(handle(), trace_id, memory_,
                                                       static_cast<mem::StreamClock*>(this), total_memory_);
  timer_ = std::make_unique<EventTimer>(timing_events_, compute_->handle());
  register_in_trace(total_memory_);
  prof::register_stream(trace_id, 0, "compute");
  prof::register_stream(trace_id, 1, "copy");
  // CUPTI's records of this GPU get the runtime's device and stream ids.
  prof::CuptiCollector::adopt_device(uint32_t(ordinal), trace_id);
  prof::CuptiCollector::adopt_stream(uint32_t(ordinal), compute_->handle(), 0);
  prof::CuptiCollector::adopt_stream(uint32_t(ordinal), copy_->handle(), 1);
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(at_exit); });
  cupti_session_attach();
}

CudaDevice::~CudaDevice() {
  synchronize();
  compute_.reset();
  copy_.reset();
}

void CudaDevice::make_current() const {
  if (t_current_device == ordinal_) return;
  check(cudaSetDevice(ordinal_), "cudaSetDevice");
  t_current_device = ordinal_;
}

// ---- kernels ------------------------------------------------------------------

std::shared_ptr<CudaDevice::Module> CudaDevice::module_for(const std::string& source, const char* name,
                                                           bool* compiled) {
  {
    std::lock_guard lock(cache_mu_);
    auto it = modules_.find(source);
    if (it != modules_.end()) return it->second;
  }
  // Compiled outside the lock: another thread may launch meanwhile.
  CompiledKernel ck;
  {
    exec::Phase phase("nvrtc", prof::SpanKind::compile);
    ck = Nvrtc::get().compile(source, arch_, name);
  }
  auto m = std::make_shared<Module>();
  m->target = ck.target;
  m->nvrtc_ns = ck.compile_ns;
  make_current();
  check(cudaLibraryLoadData(&m->library, ck.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
        "cudaLibraryLoadData (loading an NVRTC-compiled kernel)");
  if (compiled) *compiled = true;
  std::lock_guard lock(cache_mu_);
  auto [it, inserted] = modules_.emplace(source, m);
  return it->second;  // another thread's, when it got there first (ours then stays loaded, unused)
}

std::shared_ptr<const CudaDevice::Prepared> CudaDevice::prepared(const std::shared_ptr<const exec::KernelSpec>& spec) {
  {
    std::lock_guard lock(cache_mu_);
    auto it = specs_.find(spec.get());
    if (it != specs_.end() && it->second.spec.lock() == spec) return it->second.prepared;
  }
  auto p = std::make_shared<Prepared>();
  std::string why;
  p->name = spec->name;
  p->cudnn = cudnn_plan(*spec, &why);
  if (p->cudnn) {
    p->plan.scratch_bytes = CudnnAttention::scratch_bytes(*p->cudnn);
    p->name = prof::intern(std::string(spec->name) + " [cuDNN]");
  } else {
    p->plan = plan_kernel(*spec);
  }
  if (!p->plan.source.empty()) {
    p->module = module_for(p->plan.source, spec->name, nullptr);
    for (const PlanStep& s : p->plan.steps) {
      cudaKernel_t k = nullptr;
      if (s.kind == PlanStep::Kind::launch)
        check(cudaLibraryGetKernel(&k, p->module->library, s.entry.c_str()), "cudaLibraryGetKernel");
      p->kernels.push_back(k);
    }
  }
  std::lock_guard lock(cache_mu_);
  if (specs_.size() >= prune_at_) {
    // Executables that were dropped leave entries behind.
    std::erase_if(specs_, [](const auto& e) { return e.second.spec.expired(); });
    prune_at_ = std::max<size_t>(1024, specs_.size() * 2);
  }
  specs_[spec.get()] = {spec, p};
  return p;
}

std::string CudaDevice::prepare(const std::vector<std::shared_ptr<const exec::KernelSpec>>& specs) {
  make_current();
  // Sources not compiled yet are compiled in parallel (NVRTC is
  // thread-safe), then loaded here.
  std::vector<std::pair<std::string, const char*>> todo;
  size_t cached = 0, cublas = 0, cudnn = 0;
  std::string fallback;  // why an attention runs on loupe's kernel
  std::vector<bool> by_cudnn;
  for (const auto& spec : specs) {  // outside the lock: cuDNN may take a while
    std::string why;
    by_cudnn.push_back(cudnn_plan(*spec, &why) != nullptr);
    cudnn += by_cudnn.back();
    if (fallback.empty()) fallback = why;
  }
  {
    std::lock_guard lock(cache_mu_);
    for (size_t i = 0; i < specs.size(); ++i) {
      const auto& spec = specs[i];
      if (by_cudnn[i]) continue;
      KernelPlan plan = plan_kernel(*spec);
      if (plan.source.empty()) {
        ++cublas;
        continue;
      }
      bool known = modules_.count(plan.source) ||
                   std::any_of(todo.begin(), todo.end(), [&](const auto& t) { return t.first == plan.source; });
      if (known) ++cached;
      else todo.push_back({std::move(plan.source), spec->name});
    }
  }
  int64_t t0 = prof::monotonic_ns();
  std::string target;
  if (!todo.empty()) {
    exec::Phase phase("nvrtc", prof::SpanKind::compile);
    size_t workers = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
    std::vector<CompiledKernel> out(todo.size());
    std::vector<std::future<void>> jobs;
    std::atomic<size_t> next{0};
    for (size_t w = 0; w < std::min(workers, todo.size()); ++w) {
      jobs.push_back(std::async(std::launch::async, [&] {
        for (size_t i; (i = next.fetch_add(1)) < todo.size();)
          out[i] = Nvrtc::get().compile(todo[i].first, arch_, todo[i].second);
      }));
    }
    for (auto& j : jobs) j.get();  // rethrows a compile error
    for (size_t i = 0; i < todo.size(); ++i) {
      auto m = std::make_shared<Module>();
      m->target = target = out[i].target;
      m->nvrtc_ns = out[i].compile_ns;
      check(cudaLibraryLoadData(&m->library, out[i].image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
            "cudaLibraryLoadData (loading an NVRTC-compiled kernel)");
      std::lock_guard lock(cache_mu_);
      modules_.emplace(todo[i].first, m);
    }
  }
  for (const auto& spec : specs) prepared(spec);
  double ms = double(prof::monotonic_ns() - t0) / 1e6;
  std::string text = fmt::format(
      "cuda: {} kernels for sm_{}: {} compiled by NVRTC{} in {:.1f} ms, {} cached, {} cuBLAS, {} cuDNN\n", specs.size(),
      arch_, todo.size(), target.empty() ? "" : " (" + target + ")", ms, cached, cublas, cudnn);
  if (!fallback.empty()) text += "cuda: attention on loupe's kernel: " + fallback + "\n";
  return text;
}

std::shared_ptr<const CudnnAttention::Plan> CudaDevice::cudnn_plan(const exec::KernelSpec& spec, std::string* why) {
  const auto* fwd = std::get_if<exec::AttentionKernel>(&spec.body);
  const auto* bwd = std::get_if<exec::AttentionBwdKernel>(&spec.body);
  if (fwd == nullptr && bwd == nullptr) return nullptr;
  std::call_once(cudnn_once_, [this] {
    try {
      make_current();
      cudnn_ = std::make_unique<CudnnAttention>(arch_);
    } catch (const RuntimeError& e) {
      cudnn_off_ = e.what();
      // Said once per process: a user who chose fused attention on a GPU
      // expects cuDNN, unless they switched it off themselves.
      static std::once_flag said;
      if (!cudnn_switched_off())
        std::call_once(said, [&] {
          fmt::print(stderr, "loupe: cuDNN's fused attention is not used ({}); attention runs on loupe's own kernel\n",
                     cudnn_off_);
        });
    }
  });
  if (!cudnn_) {
    *why = cudnn_off_;
    return nullptr;
  }
  return cudnn_->plan(fwd != nullptr ? *fwd : bwd->fwd, bwd != nullptr, why);
}

void CudaDevice::run(const Prepared& p, const exec::KernelSpec& spec, const std::vector<void*>& buffers,
                     CudaStream& s) {
  if (p.cudnn) {
    cudnn_->run(*p.cudnn, buffers, s.handle());
    return;
  }
  if (const auto* mm = std::get_if<exec::MatmulKernel>(&spec.body)) {
    if (!cublas_) cublas_ = std::make_unique<CublasMatmul>();
    cublas_->run(*mm, buffers, s.handle());
    return;
  }
  std::vector<void*> values;
  std::vector<void*> args;
  for (size_t i = 0; i < p.plan.steps.size(); ++i) {
    const PlanStep& st = p.plan.steps[i];
    if (st.kind == PlanStep::Kind::zero) {
      check(cudaMemsetAsync(buffers.at(size_t(st.buffer)), 0, st.bytes, s.handle()), "cudaMemsetAsync");
      continue;
    }
    values.assign(st.args.size(), nullptr);
    args.assign(st.args.size(), nullptr);
    for (size_t j = 0; j < st.args.size(); ++j) {
      values[j] = buffers.at(size_t(st.args[j]));
      args[j] = &values[j];
    }
    int64_t blocks = st.blocks;
    if (st.grid_stride) {
      // Enough blocks to fill every multiprocessor twice over; the kernel
      // loops over the rest.
      int64_t fill = int64_t(sms_) * std::max<int64_t>(1, 2048 / int64_t(st.block)) * 2;
      blocks = std::min(blocks, fill);
    }
    blocks = std::clamp<int64_t>(blocks, 1, 0x7fffffff);
    cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(p.kernels[i]), dim3(unsigned(blocks), st.grid_y),
                                     dim3(st.block), args.data(), 0, s.handle());
    if (e != cudaSuccess)
      throw RuntimeError(
          fmt::format("CUDA launch of kernel {} ({}) failed: {}", spec.name, st.entry, cuda_error_text(e)));
  }
}

// ---- instrumentation ----------------------------------------------------------

bool CudaDevice::cupti_times() { return cupti_session_recording(); }

EventHandle CudaDevice::open_op(bool capturing, bool cupti, uint64_t correlation, CudaStream& s) {
  EventHandle start;
  if (capturing && !cupti) {
    start = timing_events_.get();
    check(cudaEventRecord(start.get(), s.handle()), "cudaEventRecord");
  }
  if (cupti) prof::CuptiCollector::push_correlation(correlation);
  return start;
}

CudaStream::Completion CudaDevice::completion(const char* name, prof::DeviceOpKind kind, prof::CopyKind copy,
                                              uint64_t bytes, uint64_t correlation, const EventHandle& start,
                                              CudaStream& s) {
  CudaStream::Completion c;
  if (!start) return c;
  EventHandle end = timing_events_.get();
  check(cudaEventRecord(end.get(), s.handle()), "cudaEventRecord");
  uint32_t stream = uint32_t(s.index()), device = trace_id_;
  EventTimer* timer = timer_.get();
  c.then = [=] {
    auto [t0, t1] = timer->times(start.get(), end);
    prof::device_op({.device = device,
                     .stream = stream,
                     .kind = kind,
                     .copy = copy,
                     .name = name,
                     .start = t0,
                     .end = t1,
                     .bytes = bytes,
                     .correlation = correlation});
  };
  return c;
}

exec::Event CudaDevice::launch(exec::Stream& es, std::shared_ptr<const exec::KernelSpec> spec,
                               std::vector<void*> buffers) {
  CudaStream& s = stream(es.index());
  prof::Ticks start = prof::ticks_now();
  make_current();
  std::shared_ptr<const Prepared> p = prepared(spec);
  std::shared_ptr<exec::Buffer> scratch;
  if (p->plan.scratch_bytes > 0) {
    scratch = exec::allocate(*this, p->plan.scratch_bytes, s, prof::kNoCallSite, spec->name);
    buffers.push_back(scratch->data());
  }
  const uint64_t corr = prof::next_correlation_id();
  const bool capturing = prof::capturing();
  const bool cupti = capturing && cupti_times();
  uint64_t seq = 0;
  {
    std::lock_guard lock(launch_mu_);
    EventHandle t0 = open_op(capturing, cupti, corr, s);
    try {
      run(*p, *spec, buffers, s);
    } catch (...) {
      if (cupti) prof::CuptiCollector::pop_correlation();
      throw;
    }
    if (cupti) prof::CuptiCollector::pop_correlation();
    seq = s.finish(completion(p->name, prof::DeviceOpKind::kernel, prof::CopyKind::none, 0, corr, t0, s));
  }
  // Freed in stream order: later work on this stream may reuse it.
  scratch.reset();
  if (capturing) exec::record_launch(p->name, start, trace_id_, s, corr);
  return {&es, seq};
}

exec::Event CudaDevice::copy(exec::Stream& es, prof::CopyKind kind, void* dst, const void* src, size_t bytes,
                             std::shared_ptr<void> keep_alive, uint64_t* correlation) {
  CudaStream& s = stream(es.index());
  prof::Ticks start = prof::ticks_now();
  make_current();
  const char* name = exec::copy_name(kind);
  const uint64_t corr = prof::next_correlation_id();
  if (correlation) *correlation = corr;
  const bool capturing = prof::capturing();
  const bool cupti = capturing && cupti_times();
  uint64_t seq = 0;
  {
    std::lock_guard lock(launch_mu_);
    EventHandle t0 = open_op(capturing, cupti, corr, s);
    std::shared_ptr<void> keep = keep_alive;
    std::function<void()> then;
    cudaError_t e = cudaSuccess;
    if (bytes > 0) {
      void* stage = nullptr;
      if (kind == prof::CopyKind::host_to_device) {
        if (pinned_.owns(src) || exec::pinned_owner(src, bytes)) {  // host_staging() or a PinnedBuffer
          e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s.handle());
        } else if (auto block = pinned_.get(bytes, &stage)) {
          std::memcpy(stage, src, bytes);
          e = cudaMemcpyAsync(dst, stage, bytes, cudaMemcpyHostToDevice, s.handle());
          keep = std::move(block);  // the caller's memory is free at once
        } else {
          // Pageable: the driver stages it, and returns once it has.
          e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s.handle());
        }
      } else if (kind == prof::CopyKind::device_to_host) {
        if (auto block = pinned_.get(bytes, &stage)) {
          e = cudaMemcpyAsync(stage, src, bytes, cudaMemcpyDeviceToHost, s.handle());
          then = [dst, stage, bytes] { std::memcpy(dst, stage, bytes); };
          keep = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(std::move(block),
                                                                                           std::move(keep_alive));
        } else {
          e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s.handle());
        }
      } else {
        e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.handle());
      }
    }
    if (cupti) prof::CuptiCollector::pop_correlation();
    check(e, "cudaMemcpyAsync");
    CudaStream::Completion c = completion(name, prof::DeviceOpKind::memcpy, kind, bytes, corr, t0, s);
    if (then) {
      // The data is in place before the timing is recorded and anyone sees
      // the copy done.
      auto timing = std::move(c.then);
      c.then = [then, timing] {
        then();
        if (timing) timing();
      };
    }
    c.keep = std::move(keep);
    seq = s.finish(std::move(c));
  }
  if (capturing) exec::record_launch(name, start, trace_id_, s, corr);
  return {&es, seq};
}

void CudaDevice::register_in_trace(int64_t capacity) const {
  prof::register_device({.id = trace_id_,
                         .name = fmt::format("cuda:{} ({}, sm_{})", ordinal_, name_, arch_),
                         .kind = prof::DeviceKind::cuda,
                         .memory_capacity = capacity,
                         .copy_bandwidth = 0});
}

void CudaDevice::set_memory_capacity(int64_t bytes) {
  // A limit below the GPU's memory (a test of how a program behaves on a
  // smaller GPU); the trace's capacity follows, so that the memory
  // analysis measures pressure against it.
  const int64_t capacity = std::min(bytes, total_memory_);
  allocator_->set_capacity(capacity);
  register_in_trace(capacity);
}

void CudaDevice::synchronize() {
  compute_->synchronize();
  copy_->synchronize();
  compute_->synchronize();  // work queued behind a copy wait
}

std::shared_ptr<void> CudaDevice::host_staging(size_t bytes, void** data) {
  if (auto block = pinned_.get(bytes, data)) return block;
  return DeviceImpl::host_staging(bytes, data);
}

// ---- the allocator's view of the streams ----------------------------------------

uint64_t CudaDevice::mark(int s) { return stream(s).submitted(); }
bool CudaDevice::passed(int s, uint64_t m) { return stream(s).completed_holding_locks() >= m; }
void CudaDevice::wait(int s, uint64_t m) { stream(s).wait_host(m); }

}  // namespace loupe::rt::backend::cuda
