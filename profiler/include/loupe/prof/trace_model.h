// TraceModel: a whole trace in memory, laid out for fast reading.
//
// Each event table is split into tracks (a host thread, a device stream, a
// device's memory, a counter); each track stores its events in columns
// (one contiguous array per field) sorted by start time, so that the events
// in a time range are found by binary search and scanned without touching
// other fields. Strings are resolved once into `strings`; rows refer to them
// by index. The analyses and the viewer both read this model.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_rows.h"

namespace loupe::prof {

struct TraceInfo {
  int format_major = 0, format_minor = 0;
  std::string producer;
  std::string status;          // "complete", "recording" (never finished), ...
  int64_t origin_wall_ns = 0;  // wall-clock time (Unix epoch) at time 0
  int64_t capture_end_ns = 0;  // the last commit's time, 0 if unknown
  uint64_t dropped_events = 0;
  uint64_t lost_events = 0;
  std::map<std::string, std::string> meta;  // every meta row, as written
};

struct Device {
  uint32_t id = 0;
  std::string name;
  DeviceKind kind = DeviceKind::cpu;
  int64_t memory_capacity = 0;
  int64_t copy_bandwidth = 0;
};

struct Stream {
  uint32_t device = 0, stream = 0;
  std::string name;
};

struct Thread {
  uint32_t id = 0;
  int64_t process = 0, os_tid = 0;
  std::string name;
  uint64_t dropped_events = 0;
};

struct CallSite {
  uint32_t id = 0;
  StringId file = 0;
  uint32_t line = 0;
  StringId function = 0;
};

// Every track type lists its columns in columns(), in one place, so that
// generic code (loading, merging, sizing) can visit them all.
struct HostSpans {
  uint32_t thread = 0;
  std::vector<int64_t> start, dur;
  std::vector<StringId> name;
  std::vector<SpanKind> kind;
  std::vector<uint32_t> depth;
  std::vector<uint32_t> callsite;
  auto columns() { return std::tie(start, dur, name, kind, depth, callsite); }
  size_t size() const { return start.size(); }
  int64_t end(size_t i) const { return start[i] + dur[i]; }
};

struct Instants {
  uint32_t thread = 0;
  std::vector<int64_t> time;
  std::vector<StringId> name;
  std::vector<SpanKind> kind;
  auto columns() { return std::tie(time, name, kind); }
  size_t size() const { return time.size(); }
};

struct Counter {
  StringId name = 0;
  std::vector<int64_t> time;
  std::vector<double> value;
  auto columns() { return std::tie(time, value); }
  size_t size() const { return time.size(); }
};

struct DeviceOps {
  uint32_t device = 0, stream = 0;
  std::vector<int64_t> start, dur;
  std::vector<DeviceOpKind> kind;
  std::vector<StringId> name;
  std::vector<int64_t> bytes;
  std::vector<CopyKind> copy_kind;
  std::vector<uint64_t> correlation;
  auto columns() { return std::tie(start, dur, kind, name, bytes, copy_kind, correlation); }
  size_t size() const { return start.size(); }
  int64_t end(size_t i) const { return start[i] + dur[i]; }
};

struct Launches {
  uint32_t thread = 0;
  std::vector<int64_t> start, dur;
  std::vector<StringId> name;
  std::vector<uint32_t> device, stream;
  std::vector<uint64_t> correlation;
  auto columns() { return std::tie(start, dur, name, device, stream, correlation); }
  size_t size() const { return start.size(); }
  int64_t end(size_t i) const { return start[i] + dur[i]; }
};

struct Transfers {
  uint32_t thread = 0;
  std::vector<int64_t> start, dur;
  std::vector<uint32_t> device;
  std::vector<CopyKind> direction;
  std::vector<int64_t> bytes;
  std::vector<uint8_t> synchronous, implicit;
  std::vector<HostMemory> host_memory;
  std::vector<uint32_t> callsite;
  std::vector<uint64_t> correlation;
  auto columns() {
    return std::tie(start, dur, device, direction, bytes, synchronous, implicit, host_memory, callsite, correlation);
  }
  size_t size() const { return start.size(); }
  int64_t end(size_t i) const { return start[i] + dur[i]; }
};

struct MemoryEvents {
  uint32_t device = 0;
  std::vector<int64_t> time;
  std::vector<MemoryEventKind> kind;
  std::vector<int64_t> bytes;
  std::vector<uint64_t> address;
  std::vector<int64_t> allocated, reserved;
  std::vector<uint32_t> callsite;
  auto columns() { return std::tie(time, kind, bytes, address, allocated, reserved, callsite); }
  size_t size() const { return time.size(); }
};

struct Compiles {
  uint32_t thread = 0;
  std::vector<int64_t> start, dur;
  std::vector<StringId> function, signature;
  std::vector<CompileKind> kind;
  std::vector<std::string> reason;
  std::vector<int64_t> trace_ns, optimize_ns, codegen_ns;
  std::vector<uint32_t> nodes, kernels;
  std::vector<std::string> ir;
  std::vector<uint32_t> callsite;
  std::vector<uint64_t> function_object;
  auto columns() {
    return std::tie(start, dur, function, signature, kind, reason, trace_ns, optimize_ns, codegen_ns, nodes, kernels,
                    ir, callsite, function_object);
  }
  size_t size() const { return start.size(); }
  int64_t end(size_t i) const { return start[i] + dur[i]; }
};

struct Steps {
  uint32_t thread = 0;
  std::vector<int64_t> start, dur;
  std::vector<int64_t> number;
  auto columns() { return std::tie(start, dur, number); }
  size_t size() const { return start.size(); }
  int64_t end(size_t i) const { return start[i] + dur[i]; }
};

struct TraceModel {
  std::string path;
  TraceInfo info;
  std::vector<std::string> strings;  // indexed by StringId
  std::vector<Device> devices;       // sorted by id
  std::vector<Stream> streams;       // sorted by (device, stream)
  std::vector<Thread> threads;       // sorted by id
  std::vector<CallSite> callsites;   // sorted by id

  // One entry per track, sorted by the track's key; events sorted by time.
  std::vector<HostSpans> host_spans;
  std::vector<Instants> instants;
  std::vector<Counter> counters;
  std::vector<DeviceOps> device_ops;
  std::vector<Launches> launches;
  std::vector<Transfers> transfers;
  std::vector<MemoryEvents> memory;
  std::vector<Compiles> compiles;
  std::vector<Steps> steps;

  // Earliest start and latest end over all events (0, 0 when empty).
  int64_t start_ns = 0, end_ns = 0;

  const std::string& str(StringId id) const { return strings[id]; }
  // Lookups by id; nullptr when the trace does not describe it.
  const Device* device(uint32_t id) const;
  const Thread* thread(uint32_t id) const;
  const CallSite* callsite(uint32_t id) const;
  const Stream* stream(uint32_t device, uint32_t stream) const;

  // Event counts per table, as in `loupe info`.
  uint64_t count_host_spans() const;
  uint64_t count_device_ops() const;
  uint64_t total_events() const;
  // Bytes held by the event columns and strings.
  uint64_t memory_bytes() const;
};

// The index of the first event whose start (or time) is >= t, for any
// sorted time column: the start of a visible range.
inline size_t lower_bound_time(const std::vector<int64_t>& times, int64_t t) {
  return size_t(std::lower_bound(times.begin(), times.end(), t) - times.begin());
}

}  // namespace loupe::prof
