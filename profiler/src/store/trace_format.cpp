#include "loupe/prof/trace_format.h"

#include <array>

#include "loupe/prof/trace_tables.h"

namespace loupe::prof {

namespace {
constexpr std::array<std::string_view, 5> kSpanKinds = {"runtime", "user", "wait", "compile", "timing"};
constexpr std::array<std::string_view, 5> kDeviceOpKinds = {"kernel", "memcpy", "memset", "sync", "other"};
constexpr std::array<std::string_view, 6> kCopyKinds = {"none", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
constexpr std::array<std::string_view, 3> kHostMemory = {"unknown", "pageable", "pinned"};
constexpr std::array<std::string_view, 6> kMemoryEventKinds = {"alloc", "free", "reserve", "release", "retry", "oom"};
constexpr std::array<std::string_view, 3> kCompileKinds = {"miss", "hit", "aot"};
constexpr std::array<std::string_view, 4> kDeviceKinds = {"cpu", "cuda", "rocm", "other"};
constexpr std::array<std::string_view, 4> kSyncKinds = {"device", "stream", "event", "stream_wait"};
#define LOUPE_TABLE_NAME(Row, Track, table, member) std::string_view(#table),
constexpr std::array kEventTables = {LOUPE_EVENT_TABLES(LOUPE_TABLE_NAME)};
#undef LOUPE_TABLE_NAME

template <size_t N>
std::string_view lookup(const std::array<std::string_view, N>& names, unsigned i) {
  return i < N ? names[i] : std::string_view("?");
}
}  // namespace

std::span<const std::string_view> event_table_names() { return kEventTables; }

// Each enumeration with its names: what the functions below are made of.
#define LOUPE_TRACE_ENUMS(E)                                     \
  E(SpanKind, kSpanKinds, span_kind_names)                       \
  E(DeviceOpKind, kDeviceOpKinds, device_op_kind_names)          \
  E(CopyKind, kCopyKinds, copy_kind_names)                       \
  E(HostMemory, kHostMemory, host_memory_names)                  \
  E(MemoryEventKind, kMemoryEventKinds, memory_event_kind_names) \
  E(CompileKind, kCompileKinds, compile_kind_names)              \
  E(DeviceKind, kDeviceKinds, device_kind_names)                 \
  E(SyncKind, kSyncKinds, sync_kind_names)

#define LOUPE_ENUM_NAMING(Enum, names, names_function)                 \
  std::span<const std::string_view> names_function() { return names; } \
  template <>                                                          \
  std::string_view name_of(Enum v) {                                   \
    return lookup(names, unsigned(v));                                 \
  }                                                                    \
  template <>                                                          \
  size_t enumerator_count<Enum>() {                                    \
    return names.size();                                               \
  }
LOUPE_TRACE_ENUMS(LOUPE_ENUM_NAMING)
#undef LOUPE_ENUM_NAMING
#undef LOUPE_TRACE_ENUMS

}  // namespace loupe::prof
