// The device registry, the public device functions, and the runtime's
// start-up: LOUPE_TRACE=path starts a capture for the whole process.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_device.h"
#include "backend/cuda/cuda_backend.h"
#include "exec/device_impl.h"
#include "loupe/prof/capture.h"
#include "loupe/rt/errors.h"

namespace loupe::rt {

namespace exec {

namespace {

constexpr int kMaxCpuDevices = 8;
constexpr int kMaxCudaDevices = 16;

struct Registry {
  std::mutex mu;
  // Never destroyed: worker threads and arrays may outlive static
  // destructors at exit.
  std::array<DeviceImpl*, kMaxCpuDevices> cpu{};
  std::array<DeviceImpl*, kMaxCudaDevices> cuda{};
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// ---- LOUPE_TRACE ----------------------------------------------------------

prof::Capture* g_capture = nullptr;

std::string command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (char& c : raw)
    if (c == 0) c = ' ';
  while (!raw.empty() && raw.back() == ' ') raw.pop_back();
  return raw;
}

std::string program_name() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "loupe runtime";
  buf[n] = 0;
  const char* slash = std::strrchr(buf, '/');
  return slash ? slash + 1 : buf;
}

void at_exit() {
  // Let queued device work finish before the process tears down what the
  // workers use, so that a capture holds it all; then close the capture.
  for (DeviceImpl* d : live_devices()) d->synchronize();
  if (g_capture != nullptr) g_capture->stop();
}

void start_env_capture() {
  const char* path = std::getenv("LOUPE_TRACE");
  if (path == nullptr || *path == 0) return;
  g_capture = new prof::Capture({.path = path, .producer = program_name(), .command_line = command_line()});
}

void initialize_once() {
  static bool done = [] {
    start_env_capture();
    std::atexit(at_exit);
    return true;
  }();
  (void)done;
}

}  // namespace

DeviceImpl& cuda_device_impl(Device device) {
  std::string why;
  int count = backend::cuda::device_count(&why);
  if (count == 0) throw RuntimeError(fmt::format("device {} is not available: {}", device.str(), why));
  if (device.index < 0 || device.index >= std::min(count, kMaxCudaDevices))
    throw RuntimeError(fmt::format("device {} does not exist (this machine has {} CUDA device{}: cuda:0 to cuda:{})",
                                   device.str(), count, count == 1 ? "" : "s", std::min(count, kMaxCudaDevices) - 1));
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  DeviceImpl*& slot = r.cuda[size_t(device.index)];
  if (slot == nullptr) slot = backend::cuda::create_device(device.index, backend::cuda::trace_id_of(device.index));
  return *slot;
}

DeviceImpl& device_impl(Device device) {
  initialize_once();
  if (device.type == DeviceType::cuda) return cuda_device_impl(device);
  if (device.index < 0 || device.index >= kMaxCpuDevices)
    throw RuntimeError(
        fmt::format("device {} does not exist (CPU devices are cpu:0 to cpu:{})", device.str(), kMaxCpuDevices - 1));
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  DeviceImpl*& slot = r.cpu[size_t(device.index)];
  if (slot == nullptr) slot = new backend::cpu::CpuDevice(device.index, uint32_t(device.index));
  return *slot;
}

std::vector<DeviceImpl*> live_devices() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<DeviceImpl*> out;
  for (DeviceImpl* d : r.cpu)
    if (d != nullptr) out.push_back(d);
  for (DeviceImpl* d : r.cuda)
    if (d != nullptr) out.push_back(d);
  return out;
}

}  // namespace exec

std::string Device::str() const { return fmt::format("{}:{}", type == DeviceType::cpu ? "cpu" : "cuda", index); }

namespace {

// LOUPE_DEVICE=cpu, cpu:N, cuda or cuda:N picks the default device.
Device parse_device(const std::string& text) {
  auto fail = [&] { return RuntimeError(fmt::format("LOUPE_DEVICE={}: expected cpu, cpu:N, cuda or cuda:N", text)); };
  std::string type = text, index;
  if (size_t colon = text.find(':'); colon != std::string::npos) {
    type = text.substr(0, colon);
    index = text.substr(colon + 1);
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos || index.size() > 3) throw fail();
  }
  int i = index.empty() ? 0 : std::stoi(index);
  if (type == "cpu") return Device{DeviceType::cpu, i};
  if (type == "cuda" || type == "gpu") return Device{DeviceType::cuda, i};
  throw fail();
}

}  // namespace

Device default_device() {
  static const Device d = [] {
    const char* env = std::getenv("LOUPE_DEVICE");
    if (env != nullptr && *env != 0) return parse_device(env);
    return backend::cuda::device_count(nullptr) > 0 ? Device{DeviceType::cuda, 0} : Device{DeviceType::cpu, 0};
  }();
  return d;
}

int cuda_device_count(std::string* why_not) { return backend::cuda::device_count(why_not); }

std::string cpu_blas() { return backend::cpu::blas().description(); }

Device cuda(int index) {
  Device d{DeviceType::cuda, index};
  exec::device_impl(d);  // validates and creates it
  return d;
}

Device cpu(int index) {
  Device d{DeviceType::cpu, index};
  exec::device_impl(d);  // validates and creates it
  return d;
}

MemoryStats memory_stats(Device device) { return exec::device_impl(device).allocator().stats(); }
void reset_peak_memory(Device device) { exec::device_impl(device).allocator().reset_peak(); }
void set_memory_capacity(Device device, int64_t bytes) { exec::device_impl(device).set_memory_capacity(bytes); }
void empty_cache(Device device) {
  exec::DeviceImpl& d = exec::device_impl(device);
  d.synchronize();
  d.allocator().empty_cache();
}
void synchronize(Device device) {
  exec::DeviceImpl& d = exec::device_impl(device);
  prof::Scope wait("synchronize", prof::SpanKind::wait);
  d.synchronize();
}

}  // namespace loupe::rt
