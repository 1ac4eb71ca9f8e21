// The event tables of the trace file, each described once. Everything that
// knows a table's columns follows from these lists: the SQL schema
// (store/schema.cpp), the row structs the writer takes (trace_rows.h), the
// writer's binding (trace_writer.cpp), the reader's checks
// (trace_reader.cpp) and the model's columns (trace_model.h). Adding a
// column is one line here, plus its description in docs/trace-format.md
// (a test holds the two together).
//
// LOUPE_EVENT_TABLES(T) calls T(Row, Track, table, member) for each event
// table, in the order the schema creates them: the row struct, the model's
// track struct, the SQL table and TraceModel's member.
//
// LOUPE_COLUMNS_<table>(KEY, SPAN, POINT, COL) lists a table's columns in
// SQL order. The track key comes first (one or two KEY columns), then the
// time that orders a track: SPAN(start, dur) for an event with a duration,
// POINT(time) for an instant; every table has an `id` column after its
// time (SQL only: it numbers the rows in the order they were written).
// KEY and COL take (name, type, check, default):
//   type     the row field's C++ type (the model stores a bool as uint8_t);
//   check    what the reader requires of a stored value, and the SQL type:
//              integer   any integer
//              u32       an integer in [0, 2^32)
//              count     a non-negative integer; a table's values add up to
//                        less than 2^60 (durations and byte counts)
//              level     an integer in [0, 2^60) (memory levels)
//              id64      any integer, read back as unsigned 64 bits
//              string    a string id the strings table holds
//              callsite  0, or an id the callsites table holds
//              kind      one of the enumeration's values (trace_format.h)
//              flag      0 or 1
//              real      a floating-point number (SQL REAL)
//              text      text (SQL TEXT)
//   default  the row field's initial value.
// SPAN's start and dur are integers; a duration is never negative and a
// table's durations add up to less than 2^60; times lie within +-2^62 ns.
#pragma once

#include <cstdint>

namespace loupe::prof {

// The checks above, as values: a column's `check` token names one
// (ColumnCheck::count). The reader applies them to what it reads, and an
// importer to what it would write.
enum class ColumnCheck : uint8_t { integer, u32, count, level, id64, string, callsite, kind, flag, real, text };

}  // namespace loupe::prof

#define LOUPE_EVENT_TABLES(T)                             \
  T(HostSpanRow, HostSpans, host_spans, host_spans)       \
  T(InstantRow, Instants, instants, instants)             \
  T(CounterRow, Counter, counters, counters)              \
  T(DeviceOpRow, DeviceOps, device_ops, device_ops)       \
  T(LaunchRow, Launches, launches, launches)              \
  T(TransferRow, Transfers, transfers, transfers)         \
  T(MemoryEventRow, MemoryEvents, memory_events, memory)  \
  T(CompileRow, Compiles, compiles, compiles)             \
  T(StepRow, Steps, steps, steps)                         \
  T(CollectiveRow, Collectives, collectives, collectives) \
  T(SyncRow, Syncs, syncs, syncs)

// Nested time ranges on a host thread.
#define LOUPE_COLUMNS_host_spans(KEY, SPAN, POINT, COL) \
  KEY(thread, uint32_t, u32, 0)                         \
  SPAN(start, dur)                                      \
  COL(name, StringId, string, 0)                        \
  COL(kind, SpanKind, kind, SpanKind::user)             \
  COL(depth, uint32_t, u32, 0)                          \
  COL(callsite, uint32_t, callsite, 0)

// Points in time on a host thread.
#define LOUPE_COLUMNS_instants(KEY, SPAN, POINT, COL) \
  KEY(thread, uint32_t, u32, 0)                       \
  POINT(time)                                         \
  COL(name, StringId, string, 0)                      \
  COL(kind, SpanKind, kind, SpanKind::user)

// Sampled values; each counter name is a track.
#define LOUPE_COLUMNS_counters(KEY, SPAN, POINT, COL) \
  KEY(name, StringId, string, 0)                      \
  POINT(time)                                         \
  COL(value, double, real, 0)

// Work on a device stream: kernels, copies, memsets, event waits.
#define LOUPE_COLUMNS_device_ops(KEY, SPAN, POINT, COL) \
  KEY(device, uint32_t, u32, 0)                         \
  KEY(stream, uint32_t, u32, 0)                         \
  SPAN(start, dur)                                      \
  COL(kind, DeviceOpKind, kind, DeviceOpKind::kernel)   \
  COL(name, StringId, string, 0)                        \
  COL(bytes, int64_t, count, 0)                         \
  COL(copy_kind, CopyKind, kind, CopyKind::none)        \
  COL(correlation, uint64_t, id64, 0)

// Host calls that queued device work.
#define LOUPE_COLUMNS_launches(KEY, SPAN, POINT, COL) \
  KEY(thread, uint32_t, u32, 0)                       \
  SPAN(start, dur)                                    \
  COL(name, StringId, string, 0)                      \
  COL(device, uint32_t, u32, 0)                       \
  COL(stream, uint32_t, u32, 0)                       \
  COL(correlation, uint64_t, id64, 0)

// Host-device copies as the host saw them.
#define LOUPE_COLUMNS_transfers(KEY, SPAN, POINT, COL)     \
  KEY(thread, uint32_t, u32, 0)                            \
  SPAN(start, dur)                                         \
  COL(device, uint32_t, u32, 0)                            \
  COL(direction, CopyKind, kind, CopyKind::host_to_device) \
  COL(bytes, int64_t, count, 0)                            \
  COL(synchronous, bool, flag, false)                      \
  COL(implicit, bool, flag, false)                         \
  COL(host_memory, HostMemory, kind, HostMemory::unknown)  \
  COL(callsite, uint32_t, callsite, 0)                     \
  COL(correlation, uint64_t, id64, 0)

// Device memory allocations and frees, with the levels after each.
#define LOUPE_COLUMNS_memory_events(KEY, SPAN, POINT, COL) \
  KEY(device, uint32_t, u32, 0)                            \
  POINT(time)                                              \
  COL(kind, MemoryEventKind, kind, MemoryEventKind::alloc) \
  COL(bytes, int64_t, count, 0)                            \
  COL(address, uint64_t, id64, 0)                          \
  COL(allocated, int64_t, level, 0)                        \
  COL(reserved, int64_t, level, 0)                         \
  COL(callsite, uint32_t, callsite, 0)

// Compile-cache lookups: hits, misses and what each compile cost.
#define LOUPE_COLUMNS_compiles(KEY, SPAN, POINT, COL) \
  KEY(thread, uint32_t, u32, 0)                       \
  SPAN(start, dur)                                    \
  COL(function, StringId, string, 0)                  \
  COL(signature, StringId, string, 0)                 \
  COL(kind, CompileKind, kind, CompileKind::miss)     \
  COL(reason, std::string, text, {})                  \
  COL(trace_ns, int64_t, count, 0)                    \
  COL(optimize_ns, int64_t, count, 0)                 \
  COL(codegen_ns, int64_t, count, 0)                  \
  COL(nodes, uint32_t, u32, 0)                        \
  COL(kernels, uint32_t, u32, 0)                      \
  COL(ir, std::string, text, {})                      \
  COL(callsite, uint32_t, callsite, 0)                \
  COL(function_object, uint64_t, id64, 0)

// Training steps on a host thread.
#define LOUPE_COLUMNS_steps(KEY, SPAN, POINT, COL) \
  KEY(thread, uint32_t, u32, 0)                    \
  SPAN(start, dur)                                 \
  COL(number, int64_t, integer, 0)

// Collective communication this rank took part in (an NCCL or RCCL
// kernel, a gloo call), with what matches it to the same collective on
// the other ranks of a job; each process group is a track.
#define LOUPE_COLUMNS_collectives(KEY, SPAN, POINT, COL) \
  KEY(process_group, StringId, string, 0)                \
  SPAN(start, dur)                                       \
  COL(name, StringId, string, 0)                         \
  COL(in_bytes, int64_t, count, 0)                       \
  COL(out_bytes, int64_t, count, 0)                      \
  COL(group_size, uint32_t, u32, 0)                      \
  COL(issued, int64_t, integer, 0)                       \
  COL(on_device, bool, flag, false)                      \
  COL(device, uint32_t, u32, 0)                          \
  COL(stream, uint32_t, u32, 0)

// What a host call waited for, or made a stream wait for, as the source
// recorded it (Kineto's cuda_sync records): the dependencies between the
// host and the device, and between streams, that launches and stream order
// do not give. The span is the call's, on its thread. `stream` is the
// stream synchronised (kind stream) or made to wait (stream_wait);
// `event_stream` the stream the awaited event was recorded on, and
// `recorded_at` the start of the call that recorded it (kind event and
// stream_wait); kUnknownStream and kUnknownTime where the source does not
// say.
#define LOUPE_COLUMNS_syncs(KEY, SPAN, POINT, COL) \
  KEY(thread, uint32_t, u32, 0)                    \
  SPAN(start, dur)                                 \
  COL(kind, SyncKind, kind, SyncKind::device)      \
  COL(device, uint32_t, u32, 0)                    \
  COL(stream, uint32_t, u32, kUnknownStream)       \
  COL(event_stream, uint32_t, u32, kUnknownStream) \
  COL(recorded_at, int64_t, integer, kUnknownTime)

// Expands to nothing: for the roles a generator does not use.
#define LOUPE_IGNORE(...)
