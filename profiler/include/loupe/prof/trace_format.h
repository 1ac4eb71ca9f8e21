// The vocabulary of a loupe trace file: its version and the small
// enumerations stored as integers in its tables. docs/trace-format.md
// describes every table; the enumerations here are also written into the
// file as (id, name) tables so that SQL queries can join on readable names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace loupe::prof {

// A reader accepts files of its own major version and refuses newer majors.
// Minor versions only add tables or columns, which older readers ignore.
inline constexpr int kFormatMajor = 1;
// 1.1: span kind `timing`; 1.2: table `collectives`; 1.3: `devices.detail`;
// 1.4: `callsites.parent`; 1.5: table `syncs`.
inline constexpr int kFormatMinor = 5;
// PRAGMA application_id of every loupe trace: "LUPE".
inline constexpr int32_t kApplicationId = 0x4C555045;

// Every time in a trace (a start, an end, an instant) lies strictly
// within +-2^62 ns (146 years) of the trace's origin, so that the
// difference of any two times, and any duration, fits in an int64.
inline constexpr int64_t kMaxTraceTimeNs = int64_t(1) << 62;
constexpr bool is_trace_time(int64_t t) { return t > -kMaxTraceTimeNs && t < kMaxTraceTimeNs; }
// A time column's value where the source does not say (syncs.recorded_at):
// no trace time, so that no real time can be mistaken for it.
inline constexpr int64_t kUnknownTime = -kMaxTraceTimeNs;

// The durations of one table add up to less than 2^60 ns (36 years), and
// so do its byte counts (in bytes) and each of its other summed columns:
// any total an analysis takes, of one table or of a few together, fits in
// an int64. No real trace comes near (a billion one-second events add up
// to 2^59.8 ns); only a damaged or forged file does.
inline constexpr int64_t kMaxTableTotal = int64_t(1) << 60;
// Adds `value` (>= 0) to `total`; false, leaving `total` as it was, when
// the sum would reach kMaxTableTotal.
constexpr bool add_to_table_total(int64_t& total, int64_t value) {
  if (value < 0 || value >= kMaxTableTotal - total) return false;
  total += value;
  return true;
}

// The device and stream of a launch whose device operation the trace
// lacks (a Kineto trace that recorded the launch call but not its kernel):
// it is still a launch, on a device the trace does not say.
inline constexpr uint32_t kUnknownDevice = 0xffffffff;
inline constexpr uint32_t kUnknownStream = 0xffffffff;

// Meta keys of an imported trace whose source numbers its host ops one by
// one (Kineto's "External id"): how many numbers the trace holds, and how
// many the numbering spans. A complete trace holds nearly all of them; one
// sampled or cut after recording far fewer (docs/analyses.md, "Completeness").
inline constexpr const char* kMetaHostOpIds = "host_op_ids";
inline constexpr const char* kMetaHostOpIdSpan = "host_op_id_span";

// Meta key: the devices (ids, comma-separated) whose running memory totals
// count only what was allocated while the source recorded (PyTorch's host
// memory in a Kineto trace starts at 0 whatever it held before), so what
// was held before the trace cannot be told from their first event.
inline constexpr const char* kMetaTotalsFromTraceStart = "memory_totals_from_trace_start";

// Meta key: the devices (ids, comma-separated) whose memory events are
// samples of what was live at step ends rather than each allocation and
// free (JAX tells of neither): their peak is the highest sample, and what a
// step allocated and freed between samples is not in the trace.
inline constexpr const char* kMetaMemorySampled = "memory_sampled_at_step_ends";

// Meta key: the devices (ids, comma-separated) whose memory events all
// describe one moment, what was live when a memory profile was taken (a
// pprof profile of JAX's device memory): each block an allocation at that
// moment, none freed. Their "peak" is that moment's total, not the run's.
inline constexpr const char* kMetaMemoryOneMoment = "memory_one_moment";

// Meta key of a trace whose source recorded no times, only the order of
// its events ("1"): each event's time is its place in that order, 1 ns
// apart, so its times and durations say which came first and nothing more.
inline constexpr const char* kMetaTimesAreOrder = "times_are_order";

// PRAGMA user_version packs the format version as major * 65536 + minor.
constexpr int32_t pack_user_version(int major, int minor) { return major * 65536 + minor; }

enum class SpanKind : uint8_t {
  runtime = 0,  // a phase of the runtime: dispatch, execute, allocate...
  user = 1,     // a range the program marked
  wait = 2,     // the host thread blocked on the device
  compile = 3,  // a compiler phase (trace, optimise, codegen)
  timing = 4,   // a range the program declared to be a measurement: a stopwatch
};

enum class DeviceOpKind : uint8_t {
  kernel = 0,
  memcpy = 1,
  memset = 2,
  sync = 3,  // a wait the device itself executes (an event wait on a stream)
  other = 4,
};

enum class CopyKind : uint8_t {
  none = 0,
  host_to_device = 1,
  device_to_host = 2,
  device_to_device = 3,
  host_to_host = 4,
  peer_to_peer = 5,
};

// Where host memory of a copy lives: pageable copies are synchronous and
// slower on real GPUs; pinned memory allows asynchronous DMA.
enum class HostMemory : uint8_t {
  unknown = 0,
  pageable = 1,
  pinned = 2,
};

enum class MemoryEventKind : uint8_t {
  alloc = 0,    // a block handed to the program
  free = 1,     // a block returned by the program (it may stay cached)
  reserve = 2,  // memory taken from the device (cudaMalloc, arena growth)
  release = 3,  // memory given back to the device
  retry = 4,    // the cache was flushed to satisfy an allocation
  oom = 5,      // an allocation failed after the retry
};

enum class CompileKind : uint8_t {
  miss = 0,  // traced and compiled on a call: a new input signature
  hit = 1,   // a call served from the compile cache
  aot = 2,   // compiled ahead of time (compile_for), before any call
};

// What a synchronisation waits for (table syncs).
enum class SyncKind : uint8_t {
  device = 0,       // the host waits for all work on the device (cudaDeviceSynchronize)
  stream = 1,       // the host waits for the work queued on one stream (cudaStreamSynchronize)
  event = 2,        // the host waits for an event (cudaEventSynchronize)
  stream_wait = 3,  // a stream waits for an event before its next work (cudaStreamWaitEvent)
};

enum class DeviceKind : uint8_t {
  cpu = 0,
  cuda = 1,
  rocm = 2,
  other = 3,
};

// The names of the event tables (trace_tables.h), in schema order.
std::span<const std::string_view> event_table_names();

// Names of the enumerators, in id order, as stored in the enum tables.
std::span<const std::string_view> span_kind_names();
std::span<const std::string_view> device_op_kind_names();
std::span<const std::string_view> copy_kind_names();
std::span<const std::string_view> host_memory_names();
std::span<const std::string_view> memory_event_kind_names();
std::span<const std::string_view> compile_kind_names();
std::span<const std::string_view> device_kind_names();
std::span<const std::string_view> sync_kind_names();

// The name of one enumerator ("?" when out of range, as in untrusted files).
template <typename Enum>
std::string_view name_of(Enum value);

// How many enumerators an enumeration has: its ids are 0 to count - 1.
template <typename Enum>
size_t enumerator_count();

}  // namespace loupe::prof
