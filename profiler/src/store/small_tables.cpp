#include "store/small_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "loupe/prof/trace_tables.h"
#include "store/checked_row.h"
#include "store/open_trace.h"

namespace loupe::prof::store {

namespace {

// Runs `sql` and hands each row, checked, to `read`; an error names the
// table and the row.
template <typename F>
void for_each_row(sqlite3* db, std::string_view table, const std::string& sql,
                  std::initializer_list<std::string_view> columns, F&& read) {
  std::vector<std::string_view> names(columns);
  Stmt s(db, sql);
  int64_t row = 0;
  try {
    while (s.step()) {
      read(CheckedRow(s, names));
      ++row;
    }
  } catch (const StoreError& e) {
    throw StoreError(fmt::format("{}: row {}: {}", table, row + 1, e.what()));
  }
}

int64_t meta_int(const std::map<std::string, std::string>& meta, const char* key) {
  auto it = meta.find(key);
  return it == meta.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> first_meta(const WriterOptions& options) {
  std::vector<std::pair<std::string, std::string>> meta = {
      {"format_version", fmt::format("{}.{}", kFormatMajor, kFormatMinor)},
      {"producer", options.producer},
      {"clock", "CLOCK_MONOTONIC"},
      {"origin_wall_ns", std::to_string(options.origin_wall_ns)},
      {"origin_monotonic_ns", std::to_string(options.origin_monotonic_ns)}};
  meta.insert(meta.end(), options.meta.begin(), options.meta.end());
  return meta;
}

TraceInfo trace_info(std::map<std::string, std::string> meta) {
  TraceInfo info;
  info.meta = std::move(meta);
  auto text = [&](const char* key) {
    auto it = info.meta.find(key);
    return it == info.meta.end() ? std::string() : it->second;
  };
  std::sscanf(text("format_version").c_str(), "%d.%d", &info.format_major, &info.format_minor);
  info.producer = text("producer");
  info.status = text("status");
  info.origin_wall_ns = meta_int(info.meta, "origin_wall_ns");
  info.capture_end_ns = meta_int(info.meta, "capture_end_ns");
  info.dropped_events = uint64_t(std::max<int64_t>(meta_int(info.meta, "dropped_events"), 0));
  info.lost_events = uint64_t(std::max<int64_t>(meta_int(info.meta, "lost_events"), 0));
  return info;
}

TraceInfo read_meta(sqlite3* db) {
  std::map<std::string, std::string> meta;
  for_each_row(db, "meta", "SELECT key, value FROM meta", {"key", "value"},
               [&](const CheckedRow& r) { meta.emplace(std::string(r.text(0)), std::string(r.text(1))); });
  return trace_info(std::move(meta));
}

std::vector<std::string> read_strings(sqlite3* db) {
  std::vector<std::string> strings;
  for_each_row(db, "strings", "SELECT id, text FROM strings ORDER BY id", {"id", "text"}, [&](const CheckedRow& r) {
    int64_t id = r.integer(0);
    if (id != int64_t(strings.size())) {
      throw StoreError(fmt::format("ids are not dense (found {} where {} was expected)", id, strings.size()));
    }
    strings.emplace_back(r.text(1));
  });
  if (strings.empty()) strings.emplace_back();
  return strings;
}

std::vector<Device> read_devices(sqlite3* db) {
  std::vector<Device> devices;
  // `detail` came in format 1.3: an older file's devices have none.
  const char* sql = has_column(db, "devices", "detail")
                        ? "SELECT id, name, kind, memory_capacity, copy_bandwidth, detail FROM devices ORDER BY id"
                        : "SELECT id, name, kind, memory_capacity, copy_bandwidth, '' FROM devices ORDER BY id";
  for_each_row(db, "devices", sql, {"id", "name", "kind", "memory_capacity", "copy_bandwidth", "detail"},
               [&](const CheckedRow& r) {
                 devices.push_back({.id = r.u32(0),
                                    .name = std::string(r.text(1)),
                                    .kind = r.enumerator<DeviceKind>(2),
                                    .memory_capacity = r.non_negative(3),
                                    .copy_bandwidth = r.non_negative(4),
                                    .detail = std::string(r.text(5))});
               });
  return devices;
}

std::vector<Stream> read_streams(sqlite3* db) {
  std::vector<Stream> streams;
  for_each_row(db, "streams", "SELECT device, stream, name FROM streams ORDER BY device, stream",
               {"device", "stream", "name"}, [&](const CheckedRow& r) {
                 streams.push_back({.device = r.u32(0), .stream = r.u32(1), .name = std::string(r.text(2))});
               });
  return streams;
}

std::vector<Thread> read_threads(sqlite3* db) {
  std::vector<Thread> threads;
  for_each_row(db, "threads", "SELECT id, process, os_tid, name, dropped_events FROM threads ORDER BY id",
               {"id", "process", "os_tid", "name", "dropped_events"}, [&](const CheckedRow& r) {
                 threads.push_back({.id = r.u32(0),
                                    .process = r.integer(1),
                                    .os_tid = r.integer(2),
                                    .name = std::string(r.text(3)),
                                    .dropped_events = uint64_t(r.non_negative(4))});
               });
  return threads;
}

// Every parent a call site names exists, and following parents ends: a
// parent has a smaller id than its child (a caller is interned first).
void check_parents(const std::vector<CallSite>& callsites) {
  std::unordered_set<uint32_t> ids;
  for (const CallSite& c : callsites) ids.insert(c.id);
  for (const CallSite& c : callsites) {
    if (c.parent == 0) continue;
    if (c.parent >= c.id || !ids.count(c.parent)) {
      throw StoreError(fmt::format("call site {} has parent {}, which is not an earlier call site", c.id, c.parent));
    }
  }
}

std::vector<CallSite> read_callsites(sqlite3* db, size_t strings) {
  std::vector<CallSite> callsites;
  // `parent` came in format 1.4: an older file's call sites are one frame each.
  const char* sql = has_column(db, "callsites", "parent")
                        ? "SELECT id, file, line, function, parent FROM callsites ORDER BY id"
                        : "SELECT id, file, line, function, 0 FROM callsites ORDER BY id";
  for_each_row(db, "callsites", sql, {"id", "file", "line", "function", "parent"}, [&](const CheckedRow& r) {
    CallSite c{.id = r.u32(0), .file = r.u32(1), .line = r.u32(2), .function = r.u32(3), .parent = r.u32(4)};
    if (c.file >= strings || c.function >= strings) {
      throw StoreError(fmt::format("call site {} refers to a missing string", c.id));
    }
    callsites.push_back(c);
  });
  check_parents(callsites);
  return callsites;
}

std::map<std::string, std::vector<TrackClaim>> read_tracks(sqlite3* db) {
  std::map<std::string, std::vector<TrackClaim>> tracks;
  for_each_row(db, "tracks", "SELECT tbl, a, b, rows, first_start, last_end FROM tracks ORDER BY tbl, a, b",
               {"tbl", "a", "b", "rows", "first_start", "last_end"}, [&](const CheckedRow& r) {
                 std::string_view table = r.text(0);
                 std::span<const std::string_view> names = event_table_names();
                 if (std::find(names.begin(), names.end(), table) == names.end()) {
                   throw StoreError(fmt::format("names '{}', which is not an event table", table));
                 }
                 TrackClaim t{r.integer(1), r.integer(2), r.in_range(3, 1, std::numeric_limits<int64_t>::max()),
                              r.in_range(4, -kMaxTraceTimeNs + 1, kMaxTraceTimeNs - 1),
                              r.in_range(5, -kMaxTraceTimeNs + 1, kMaxTraceTimeNs - 1)};
                 if (t.last < t.first) throw StoreError("last_end is before first_start");
                 tracks[std::string(table)].push_back(t);
               });
  return tracks;
}

}  // namespace loupe::prof::store
