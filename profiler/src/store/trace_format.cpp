#include "loupe/prof/trace_format.h"

#include <array>

namespace loupe::prof {

namespace {
constexpr std::array<std::string_view, 5> kSpanKinds = {"runtime", "user", "wait", "compile", "timing"};
constexpr std::array<std::string_view, 5> kDeviceOpKinds = {"kernel", "memcpy", "memset", "sync", "other"};
constexpr std::array<std::string_view, 6> kCopyKinds = {"none", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
constexpr std::array<std::string_view, 3> kHostMemory = {"unknown", "pageable", "pinned"};
constexpr std::array<std::string_view, 6> kMemoryEventKinds = {"alloc", "free", "reserve", "release", "retry", "oom"};
constexpr std::array<std::string_view, 3> kCompileKinds = {"miss", "hit", "aot"};
constexpr std::array<std::string_view, 4> kDeviceKinds = {"cpu", "cuda", "rocm", "other"};

template <size_t N>
std::string_view lookup(const std::array<std::string_view, N>& names, unsigned i) {
  return i < N ? names[i] : std::string_view("?");
}
}  // namespace

std::span<const std::string_view> span_kind_names() { return kSpanKinds; }
std::span<const std::string_view> device_op_kind_names() { return kDeviceOpKinds; }
std::span<const std::string_view> copy_kind_names() { return kCopyKinds; }
std::span<const std::string_view> host_memory_names() { return kHostMemory; }
std::span<const std::string_view> memory_event_kind_names() { return kMemoryEventKinds; }
std::span<const std::string_view> compile_kind_names() { return kCompileKinds; }
std::span<const std::string_view> device_kind_names() { return kDeviceKinds; }

template <>
std::string_view name_of(SpanKind v) {
  return lookup(kSpanKinds, unsigned(v));
}
template <>
std::string_view name_of(DeviceOpKind v) {
  return lookup(kDeviceOpKinds, unsigned(v));
}
template <>
std::string_view name_of(CopyKind v) {
  return lookup(kCopyKinds, unsigned(v));
}
template <>
std::string_view name_of(HostMemory v) {
  return lookup(kHostMemory, unsigned(v));
}
template <>
std::string_view name_of(MemoryEventKind v) {
  return lookup(kMemoryEventKinds, unsigned(v));
}
template <>
std::string_view name_of(CompileKind v) {
  return lookup(kCompileKinds, unsigned(v));
}
template <>
std::string_view name_of(DeviceKind v) {
  return lookup(kDeviceKinds, unsigned(v));
}

template <>
size_t enumerator_count<SpanKind>() {
  return kSpanKinds.size();
}
template <>
size_t enumerator_count<DeviceOpKind>() {
  return kDeviceOpKinds.size();
}
template <>
size_t enumerator_count<CopyKind>() {
  return kCopyKinds.size();
}
template <>
size_t enumerator_count<HostMemory>() {
  return kHostMemory.size();
}
template <>
size_t enumerator_count<MemoryEventKind>() {
  return kMemoryEventKinds.size();
}
template <>
size_t enumerator_count<CompileKind>() {
  return kCompileKinds.size();
}
template <>
size_t enumerator_count<DeviceKind>() {
  return kDeviceKinds.size();
}

}  // namespace loupe::prof
