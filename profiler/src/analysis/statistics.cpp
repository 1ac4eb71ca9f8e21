#include "loupe/prof/statistics.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

StatCell text(std::string s) { return {std::move(s), 0, false}; }
StatCell count(uint64_t n) { return {format_count(n), double(n), true}; }
StatCell duration(int64_t ns) { return {format_duration(ns), double(ns), true}; }
StatCell bytes(int64_t b) { return {format_bytes(b), double(b), true}; }
StatCell percent(double f) { return {format_percent(f), f * 100.0, true}; }

// Durations of one name: count, total, min, max and the median.
struct Durations {
  std::vector<int64_t> values;
  int64_t total = 0;
  void add(int64_t d) {
    values.push_back(d);
    total += d;
  }
  int64_t median() {
    auto mid = values.begin() + long(values.size() / 2);
    std::nth_element(values.begin(), mid, values.end());
    return *mid;
  }
  int64_t min() const { return *std::min_element(values.begin(), values.end()); }
  int64_t max() const { return *std::max_element(values.begin(), values.end()); }
};

void sort_rows(StatTable& t, size_t column) {
  std::stable_sort(t.rows.begin(), t.rows.end(),
                   [column](const auto& a, const auto& b) { return a[column].value > b[column].value; });
}

StatTable device_op_table(const TraceModel& m) {
  StatTable t{"device_ops",
              "Device operations by name",
              {"name", "kind", "count", "total", "avg", "median", "min", "max", "time %"},
              {}};
  std::map<std::pair<StringId, DeviceOpKind>, Durations> by;
  int64_t all = 0;
  for (const DeviceOps& s : m.device_ops) {
    for (size_t i = 0; i < s.size(); ++i) {
      by[{s.name[i], s.kind[i]}].add(s.dur[i]);
      all += s.dur[i];
    }
  }
  for (auto& [key, d] : by) {
    size_t n = d.values.size();
    t.rows.push_back({text(m.str(key.first)), text(std::string(name_of(key.second))), count(n), duration(d.total),
                      duration(d.total / int64_t(n)), duration(d.median()), duration(d.min()), duration(d.max()),
                      percent(all > 0 ? double(d.total) / double(all) : 0)});
  }
  sort_rows(t, 3);
  return t;
}

std::string size_bucket(int64_t b) {
  if (b < 1024) return "< 1 KiB";
  if (b < int64_t(1) << 20) return "1 KiB - 1 MiB";
  if (b < int64_t(64) << 20) return "1 - 64 MiB";
  return ">= 64 MiB";
}

StatTable transfer_table(const TraceModel& m) {
  StatTable t{"transfers",
              "Transfers by direction and size",
              {"direction", "size", "count", "bytes", "host time", "synchronous", "pageable", "bandwidth"},
              {}};
  struct Agg {
    uint64_t n = 0, sync = 0, pageable = 0;
    int64_t bytes = 0, ns = 0;
  };
  std::map<std::pair<CopyKind, std::string>, Agg> by;
  for (const Transfers& s : m.transfers) {
    for (size_t i = 0; i < s.size(); ++i) {
      Agg& a = by[{s.direction[i], size_bucket(s.bytes[i])}];
      ++a.n;
      a.bytes += s.bytes[i];
      a.ns += s.dur[i];
      a.sync += s.synchronous[i];
      a.pageable += s.host_memory[i] == HostMemory::pageable;
    }
  }
  for (auto& [key, a] : by) {
    double bw = a.ns > 0 ? double(a.bytes) / (double(a.ns) * 1e-9) : 0;
    t.rows.push_back({text(std::string(name_of(key.first))),
                      text(key.second),
                      count(a.n),
                      bytes(a.bytes),
                      duration(a.ns),
                      count(a.sync),
                      count(a.pageable),
                      {format_byte_rate(bw), bw, true}});
  }
  sort_rows(t, 3);
  return t;
}

StatTable host_span_table(const TraceModel& m) {
  StatTable t{
      "host_spans", "Host spans by name", {"name", "kind", "count", "total", "avg", "median", "min", "max"}, {}};
  std::map<std::pair<StringId, SpanKind>, Durations> by;
  for (const HostSpans& s : m.host_spans) {
    for (size_t i = 0; i < s.size(); ++i) by[{s.name[i], s.kind[i]}].add(s.dur[i]);
  }
  for (auto& [key, d] : by) {
    size_t n = d.values.size();
    t.rows.push_back({text(m.str(key.first)), text(std::string(name_of(key.second))), count(n), duration(d.total),
                      duration(d.total / int64_t(n)), duration(d.median()), duration(d.min()), duration(d.max())});
  }
  sort_rows(t, 3);
  return t;
}

StatTable compile_table(const TraceModel& m) {
  StatTable t{"compiles",
              "Compiles by function",
              {"function", "calls", "misses", "hits", "ahead of time", "compile time", "avg compile", "signatures"},
              {}};
  struct Agg {
    uint64_t calls = 0, kinds[3] = {};
    int64_t compile_ns = 0;
    std::vector<StringId> signatures;
  };
  std::map<StringId, Agg> by;
  for (const Compiles& c : m.compiles) {
    for (size_t i = 0; i < c.size(); ++i) {
      Agg& a = by[c.function[i]];
      ++a.calls;
      if (size_t(c.kind[i]) < 3) ++a.kinds[size_t(c.kind[i])];
      if (c.kind[i] != CompileKind::hit) a.compile_ns += c.dur[i];
      a.signatures.push_back(c.signature[i]);
    }
  }
  for (auto& [fn, a] : by) {
    std::sort(a.signatures.begin(), a.signatures.end());
    size_t sigs = size_t(std::unique(a.signatures.begin(), a.signatures.end()) - a.signatures.begin());
    uint64_t compiled = a.kinds[0] + a.kinds[2];
    t.rows.push_back({text(m.str(fn)), count(a.calls), count(a.kinds[0]), count(a.kinds[1]), count(a.kinds[2]),
                      duration(a.compile_ns), duration(compiled ? a.compile_ns / int64_t(compiled) : 0), count(sigs)});
  }
  sort_rows(t, 5);
  return t;
}

StatTable memory_table(const TraceModel& m) {
  StatTable t{
      "memory",
      "Memory peaks by device",
      {"device", "peak allocated", "at", "peak reserved", "capacity", "of capacity", "retries", "out of memory"},
      {}};
  for (const MemoryEvents& me : m.memory) {
    if (me.size() == 0) continue;
    size_t peak = size_t(std::max_element(me.allocated.begin(), me.allocated.end()) - me.allocated.begin());
    int64_t reserved = *std::max_element(me.reserved.begin(), me.reserved.end());
    uint64_t retries = 0, ooms = 0;
    for (MemoryEventKind k : me.kind) {
      retries += k == MemoryEventKind::retry;
      ooms += k == MemoryEventKind::oom;
    }
    const Device* d = m.device(me.device);
    int64_t capacity = d ? d->memory_capacity : 0;
    t.rows.push_back({text(d ? fmt::format("{} {}", me.device, d->name) : std::to_string(me.device)),
                      bytes(me.allocated[peak]), duration(me.time[peak]), bytes(reserved), bytes(capacity),
                      percent(capacity > 0 ? double(me.allocated[peak]) / double(capacity) : 0), count(retries),
                      count(ooms)});
  }
  return t;
}

}  // namespace

std::vector<StatTable> trace_statistics(const TraceModel& m) {
  return {device_op_table(m), transfer_table(m), host_span_table(m), compile_table(m), memory_table(m)};
}

}  // namespace loupe::prof
