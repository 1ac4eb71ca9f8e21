// Nsight Systems SQLite exports (`nsys export --type sqlite`). Tables are
// read by column name, so that the columns different nsys versions add or
// drop do not matter; the enum tables (ENUM_CUDA_MEMCPY_OPER,
// ENUM_CUDA_MEM_KIND, ENUM_CUDA_DEV_MEM_EVENT_OPER) name copy and memory
// kinds where present, with NVIDIA's documented ids as the fallback.
//   CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET -> device ops (+ transfers)
//   CUPTI_ACTIVITY_KIND_RUNTIME (and _DRIVER)      -> launches, waits, runtime spans
//   CUPTI_ACTIVITY_KIND_SYNCHRONIZATION            -> marks its API call as a wait
//   NVTX_EVENTS                                    -> user spans and instants
//   CUDA_GPU_MEMORY_USAGE_EVENTS                   -> memory events
//   TARGET_INFO_GPU                                -> devices
// The file is untrusted: it is opened read-only through the same defensive
// gate as loupe's own traces, every table read must be a real table with
// the columns used, and a bad value names its table and row.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "import/chrome_common.h"
#include "import/imported_trace.h"
#include "import/mappings.h"
#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_reader.h"
#include "store/open_trace.h"
#include "store/sqlite.h"

namespace loupe::prof::import {

namespace {

using store::Stmt;

constexpr std::string_view kKernel = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr std::string_view kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr std::string_view kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr std::string_view kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr std::string_view kDriver = "CUPTI_ACTIVITY_KIND_DRIVER";
constexpr std::string_view kSync = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr std::string_view kNvtx = "NVTX_EVENTS";
constexpr std::string_view kMemory = "CUDA_GPU_MEMORY_USAGE_EVENTS";

// NVTX event types (ENUM_NSYS_EVENT_TYPE).
constexpr int64_t kNvtxMark = 34, kNvtxPushPop = 59, kNvtxStartEnd = 60;

class NsysReader {
 public:
  NsysReader(const std::string& path, StringPool& strings, ImportedTrace& out)
      : path_(path), strings_(strings), out_(out) {}

  void run() {
    try {
      db_ = store::open_sqlite_read_only(path_);
    } catch (const TraceError& e) {
      throw ImportError(e.what());
    }
    try {
      store::exec(db_.get(), "BEGIN");  // one consistent snapshot
      tables();
      string_ids();
      enums();
      threads();
      gpus();
      session_start();
      if (has(kKernel)) kernels();
      if (has(kMemcpy)) memcpys();
      if (has(kMemset)) memsets();
      if (has(kSync)) syncs();
      if (has(kRuntime)) api_calls(kRuntime);
      if (has(kDriver)) api_calls(kDriver);
      if (has(kNvtx)) nvtx();
      if (has(kMemory)) memory();
    } catch (const StoreError& e) {
      fail(current_table_, e.what());
    }
    join_api_calls(calls_, ops_, sync_records_, strings_, out_);
    for (const PendingOp& op : ops_) streams_.insert({op.row.device, op.row.stream});
    emit_device_ops(ops_, out_);
    devices_and_streams();
    assign_depths(out_.host_spans);
    emit_threads();
    out_.meta["source_format"] = "nsys";
    out_.meta["clock"] = "nsys: ns from the session start";
  }

 private:
  [[noreturn]] void fail(std::string_view table, std::string_view what) const {
    if (table.empty()) throw ImportError(fmt::format("{}: {}", path_, what));
    throw ImportError(fmt::format("{}: table {}: {}", path_, table, what));
  }

  // ---- schema ---------------------------------------------------------------

  void tables() {
    Stmt s(db_.get(), "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view')");
    while (s.step()) kinds_[std::string(s.text(0))] = std::string(s.text(1));
  }

  bool has(std::string_view table) const { return kinds_.count(std::string(table)) > 0; }

  // The table's columns, after checking that it is a real table that has
  // every column in `required`.
  std::set<std::string> columns(std::string_view table, std::initializer_list<std::string_view> required) {
    current_table_ = std::string(table);
    auto it = kinds_.find(std::string(table));
    if (it == kinds_.end()) fail(table, "missing");
    if (it->second != "table") fail(table, fmt::format("is a {}, not a table", it->second));
    std::set<std::string> cols;
    Stmt s(db_.get(), fmt::format("SELECT name FROM pragma_table_info('{}')", table));
    while (s.step()) cols.insert(std::string(s.text(0)));
    for (std::string_view c : required) {
      if (!cols.count(std::string(c))) fail(table, fmt::format("lacks column '{}'", c));
    }
    return cols;
  }

  // "SELECT a, b, NULL ..." for the columns wanted, NULL where one is absent.
  static std::string select(std::string_view table, const std::set<std::string>& have,
                            std::initializer_list<std::string_view> wanted) {
    std::string sql = "SELECT ";
    bool first = true;
    for (std::string_view c : wanted) {
      if (!first) sql += ", ";
      first = false;
      sql += have.count(std::string(c)) ? fmt::format("\"{}\"", c) : std::string("NULL");
    }
    return sql + fmt::format(" FROM \"{}\"", table);
  }

  // ---- values -------------------------------------------------------------------

  // An integer column: NULL gives `fallback` (kNone = required); anything but
  // an integer fails, naming the table and the row.
  int64_t integer(Stmt& s, int col, std::string_view name, uint64_t row, int64_t fallback = kNone) {
    int type = sqlite3_column_type(s.get(), col);
    if (type == SQLITE_INTEGER) return s.int64(col);
    if (type == SQLITE_NULL) {
      if (fallback != kNone) return fallback;
      fail(current_table_, fmt::format("row {}: column '{}' is NULL", row, name));
    }
    if (type == SQLITE_FLOAT) {
      double v = s.real(col);
      if (v == double(int64_t(v))) return int64_t(v);
    }
    fail(current_table_, fmt::format("row {}: column '{}' is not an integer", row, name));
  }

  StringId string_id(int64_t id, uint64_t row, std::string_view column) {
    auto it = string_ids_.find(id);
    if (it == string_ids_.end()) {
      fail(current_table_,
           fmt::format("row {}: column '{}' refers to string id {}, which StringIds lacks", row, column, id));
    }
    return it->second;
  }

  // Source times: the span, or nothing (counted) when end precedes start
  // or a time lies where a trace cannot hold it.
  bool span(int64_t start, int64_t end) {
    if (!is_trace_time(start) || !is_trace_time(end)) {
      ++out_.skipped[kTimeOutOfRange];
      return false;
    }
    if (end >= start) return true;
    ++out_.skipped[fmt::format("{} rows that end before they start", current_table_)];
    return false;
  }
  bool instant(int64_t time) {
    if (is_trace_time(time)) return true;
    ++out_.skipped[kTimeOutOfRange];
    return false;
  }

  // ---- tables ---------------------------------------------------------------------

  // Calls f(row) for each row of `s`, numbered from 1 as errors name them.
  template <typename F>
  static void each_row(Stmt& s, F&& f) {
    for (uint64_t row = 1; s.step(); ++row) f(row);
  }

  // The same over a table of events, each one of the source's events.
  template <typename F>
  void each_event(Stmt& s, F&& f) {
    each_row(s, [&](uint64_t row) {
      ++out_.source_events;
      f(row);
    });
  }

  void string_ids() {
    if (!has("StringIds")) return;
    columns("StringIds", {"id", "value"});
    Stmt s(db_.get(), "SELECT id, value FROM StringIds");
    each_row(s, [&](uint64_t row) {
      int64_t id = integer(s, 0, "id", row);
      string_ids_[id] = strings_.intern(s.text(1));
    });
  }

  // Enum tables name their values; the documented ids are the fallback.
  std::map<int64_t, std::string> enum_names(std::string_view table) {
    std::map<int64_t, std::string> names;
    if (!has(table)) return names;
    auto cols = columns(table, {"id"});
    std::string label = cols.count("name") ? "name" : cols.count("label") ? "label" : "";
    if (label.empty()) return names;
    Stmt s(db_.get(), fmt::format("SELECT id, \"{}\" FROM \"{}\"", label, table));
    each_row(s, [&](uint64_t row) { names[integer(s, 0, "id", row)] = std::string(s.text(1)); });
    return names;
  }

  void enums() {
    for (const auto& [id, name] : enum_names("ENUM_CUDA_MEMCPY_OPER")) copy_kinds_[id] = copy_kind_named(name);
    for (const auto& [id, name] : enum_names("ENUM_CUDA_MEM_KIND")) mem_kinds_[id] = name;
    for (const auto& [id, name] : enum_names("ENUM_CUDA_DEV_MEM_EVENT_OPER")) {
      mem_opers_[id] = name.find("DEALLOC") != std::string::npos || name.find("Dealloc") != std::string::npos ||
                               name.find("FREE") != std::string::npos
                           ? MemoryEventKind::free
                           : MemoryEventKind::alloc;
    }
  }

  static CopyKind copy_kind_named(const std::string& name) {
    auto has_word = [&](std::string_view w) { return name.find(w) != std::string::npos; };
    // "CUDA_MEMCPY_OPER_HTOD" or "Host-to-Device", "...DTOH", "...DTOD", "...PTOP"...
    if (has_word("HTOD") || has_word("Host-to-Device") || has_word("HTOA")) return CopyKind::host_to_device;
    if (has_word("DTOH") || has_word("Device-to-Host") || has_word("ATOH")) return CopyKind::device_to_host;
    if (has_word("PTOP") || has_word("Peer-to-Peer")) return CopyKind::peer_to_peer;
    if (has_word("HTOH") || has_word("Host-to-Host")) return CopyKind::host_to_host;
    if (has_word("DTOD") || has_word("Device-to-Device") || has_word("ATOA") || has_word("ATOD") || has_word("DTOA")) {
      return CopyKind::device_to_device;
    }
    return CopyKind::none;
  }

  CopyKind copy_kind(int64_t id) const {
    if (auto it = copy_kinds_.find(id); it != copy_kinds_.end()) return it->second;
    // CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 3 HtoA, 4 AtoH, 5 AtoA,
    // 6 AtoD, 7 DtoA, 8 DtoD, 9 HtoH, 10 PtoP.
    switch (id) {
      case 1:
      case 3: return CopyKind::host_to_device;
      case 2:
      case 4: return CopyKind::device_to_host;
      case 5:
      case 6:
      case 7:
      case 8: return CopyKind::device_to_device;
      case 9: return CopyKind::host_to_host;
      case 10: return CopyKind::peer_to_peer;
      default: return CopyKind::none;  // an integer from the file: 0 (unknown), or a kind newer than this list
    }
  }

  // "Pageable", "Pinned", "Device", ... (CUpti_ActivityMemoryKind).
  std::string mem_kind(int64_t id) const {
    if (auto it = mem_kinds_.find(id); it != mem_kinds_.end()) {
      // "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE" -> "Pageable"; labels pass as they are.
      std::string n = it->second;
      size_t p = n.rfind("KIND_");
      if (p != std::string::npos) {
        n = n.substr(p + 5);
        for (size_t i = 0; i < n.size(); ++i) {
          n[i] = n[i] == '_' ? ' ' : (i == 0 || n[i - 1] == '_') ? n[i] : char(std::tolower(n[i]));
        }
      }
      return n;
    }
    static const char* kNames[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                   "Array",   "Managed",  "Device Static", "Managed Static"};
    return id >= 0 && id < 8 ? kNames[id] : "Unknown";
  }

  static HostMemory host_memory(std::string_view kind) {
    if (kind == "Pageable") return HostMemory::pageable;
    if (kind == "Pinned") return HostMemory::pinned;
    return HostMemory::unknown;
  }

  // globalTid packs the process and thread ids: pid = (globalTid >> 24) &
  // 0xFFFFFF, tid = globalTid & 0xFFFFFF.
  uint32_t thread(int64_t global_tid) {
    auto [it, inserted] = threads_.try_emplace(global_tid, uint32_t(threads_.size() + 1));
    if (inserted) thread_order_.push_back(global_tid);
    return it->second;
  }

  void threads() {
    if (has("ThreadNames")) {
      columns("ThreadNames", {"nameId", "globalTid"});
      Stmt s(db_.get(), "SELECT nameId, globalTid FROM ThreadNames");
      each_row(s, [&](uint64_t row) {
        int64_t name = integer(s, 0, "nameId", row);
        auto it = string_ids_.find(name);
        if (it != string_ids_.end()) thread_names_[integer(s, 1, "globalTid", row)] = it->second;
      });
    }
    if (has("PROCESSES")) {
      columns("PROCESSES", {"globalPid", "name"});
      Stmt s(db_.get(), "SELECT globalPid, name FROM PROCESSES");
      each_row(s,
               [&](uint64_t row) { process_names_[integer(s, 0, "globalPid", row) >> 24] = std::string(s.text(1)); });
    }
  }

  void emit_threads() {
    for (int64_t global_tid : thread_order_) {
      ThreadRow t;
      t.id = threads_.at(global_tid);
      t.process = (global_tid >> 24) & 0xFFFFFF;
      t.os_tid = global_tid & 0xFFFFFF;
      if (auto it = thread_names_.find(global_tid); it != thread_names_.end()) {
        t.name = std::string(strings_.text(it->second));
      } else if (auto p = process_names_.find(global_tid >> 24); p != process_names_.end()) {
        t.name = fmt::format("{} thread {}", p->second, t.os_tid);
      } else {
        t.name = fmt::format("thread {}", t.os_tid);
      }
      out_.threads.push_back(std::move(t));
    }
  }

  void gpus() {
    if (!has("TARGET_INFO_GPU")) return;
    auto cols = columns("TARGET_INFO_GPU", {"id"});
    Stmt s(db_.get(), select("TARGET_INFO_GPU", cols, {"id", "name", "totalMemory"}));
    each_row(s, [&](uint64_t row) {
      int64_t id = integer(s, 0, "id", row);
      if (id < 0 || id > 0xffff) fail(current_table_, fmt::format("row {}: bad GPU id {}", row, id));
      DeviceRow d{.id = uint32_t(id),
                  .name = std::string(s.text(1)),
                  .kind = DeviceKind::cuda,
                  .memory_capacity = integer(s, 2, "totalMemory", row, 0)};
      if (d.name.empty()) d.name = fmt::format("GPU {}", id);
      gpus_[d.id] = d;
    });
  }

  void session_start() {
    if (!has("TARGET_INFO_SESSION_START_TIME")) return;
    columns("TARGET_INFO_SESSION_START_TIME", {"utcEpochNs"});
    Stmt s(db_.get(), "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1");
    if (s.step()) {
      out_.wall_clock_known = true;
      out_.wall_ns_at_zero = integer(s, 0, "utcEpochNs", 1);
    }
  }

  uint32_t device_id(int64_t id, uint64_t row) {
    if (id < 0 || id > 0xffff) fail(current_table_, fmt::format("row {}: bad deviceId {}", row, id));
    return uint32_t(id);
  }
  uint32_t stream_id(int64_t id, uint64_t row) {
    if (id < 0 || id > 0xffffffffll) fail(current_table_, fmt::format("row {}: bad streamId {}", row, id));
    return uint32_t(id);
  }

  // The rows of a kernel, memcpy or memset table as device ops of `kind`,
  // from the columns the three share, selected first: start, end,
  // deviceId, streamId, correlationId; finish(op, row) reads the rest.
  // Rows whose times cannot be used are left out.
  template <typename Finish>
  void device_ops(Stmt& s, DeviceOpKind kind, Finish&& finish) {
    each_event(s, [&](uint64_t row) {
      int64_t start = integer(s, 0, "start", row), end = integer(s, 1, "end", row);
      if (!span(start, end)) return;
      PendingOp op;
      op.row = {.device = device_id(integer(s, 2, "deviceId", row), row),
                .stream = stream_id(integer(s, 3, "streamId", row), row),
                .start = start,
                .dur = end - start,
                .kind = kind};
      op.correlation = integer(s, 4, "correlationId", row, kNone);
      finish(op, row);
      ops_.push_back(op);
    });
  }

  void kernels() {
    auto cols = columns(kKernel, {"start", "end", "deviceId", "streamId"});
    std::string_view name_col = cols.count("demangledName") ? "demangledName"
                                : cols.count("shortName")   ? "shortName"
                                                            : "name";
    Stmt s(db_.get(), select(kKernel, cols, {"start", "end", "deviceId", "streamId", "correlationId", name_col}));
    device_ops(s, DeviceOpKind::kernel, [&](PendingOp& op, uint64_t row) {
      int64_t name = integer(s, 5, name_col, row, -1);
      op.row.name = name < 0 ? strings_.intern("kernel") : string_id(name, row, name_col);
      op.bytes = 0;
    });
  }

  void memcpys() {
    auto cols = columns(kMemcpy, {"start", "end", "deviceId", "streamId", "bytes", "copyKind"});
    Stmt s(db_.get(), select(kMemcpy, cols,
                             {"start", "end", "deviceId", "streamId", "correlationId", "bytes", "copyKind", "srcKind",
                              "dstKind"}));
    device_ops(s, DeviceOpKind::memcpy, [&](PendingOp& op, uint64_t row) {
      op.bytes = integer(s, 5, "bytes", row);
      int64_t kind = integer(s, 6, "copyKind", row);
      op.row.copy_kind = copy_kind(kind);
      std::string src = mem_kind(integer(s, 7, "srcKind", row, 0));
      std::string dst = mem_kind(integer(s, 8, "dstKind", row, 0));
      if (op.row.copy_kind == CopyKind::host_to_device || op.row.copy_kind == CopyKind::host_to_host) {
        op.host_memory = host_memory(src);
      } else if (op.row.copy_kind == CopyKind::device_to_host) {
        op.host_memory = host_memory(dst);
      }
      static const char* kTokens[] = {"?", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
      op.row.name = strings_.intern(fmt::format("Memcpy {} ({} -> {})", kTokens[int(op.row.copy_kind)], src, dst));
    });
  }

  void memsets() {
    auto cols = columns(kMemset, {"start", "end", "deviceId", "streamId", "bytes"});
    Stmt s(db_.get(),
           select(kMemset, cols, {"start", "end", "deviceId", "streamId", "correlationId", "bytes", "memKind"}));
    device_ops(s, DeviceOpKind::memset, [&](PendingOp& op, uint64_t row) {
      op.bytes = integer(s, 5, "bytes", row);
      op.row.name = strings_.intern(fmt::format("Memset ({})", mem_kind(integer(s, 6, "memKind", row, 3))));
    });
  }

  // CUPTI's synchronisation records. They name the event a wait is for
  // (eventId), not the stream or the call that recorded it: a sync row
  // from nsys has no event_stream or recorded_at.
  void syncs() {
    auto cols = columns(kSync, {"start", "end"});
    Stmt s(db_.get(), select(kSync, cols, {"correlationId", "syncType", "deviceId", "streamId"}));
    each_event(s, [&](uint64_t row) {
      sync_records_.push_back({.correlation = integer(s, 0, "correlationId", row, kNone),
                               .kind = sync_kind(integer(s, 1, "syncType", row, 0)),
                               .device = integer(s, 2, "deviceId", row, -1),
                               .stream = integer(s, 3, "streamId", row, -1)});
    });
  }

  // CUpti_ActivitySynchronizationType.
  static std::optional<SyncKind> sync_kind(int64_t type) {
    switch (type) {
      case 1: return SyncKind::event;
      case 2: return SyncKind::stream_wait;
      case 3: return SyncKind::stream;
      case 4: return SyncKind::device;
      default: return std::nullopt;  // 0: CUPTI did not know either
    }
  }

  // "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": nsys adds the API version.
  static std::string_view api_name(std::string_view name) {
    size_t p = name.rfind("_v");
    if (p != std::string_view::npos && p + 2 < name.size() &&
        name.find_first_not_of("0123456789", p + 2) == std::string_view::npos) {
      return name.substr(0, p);
    }
    return name;
  }

  void api_calls(std::string_view table) {
    auto cols = columns(table, {"start", "end", "globalTid", "nameId"});
    Stmt s(db_.get(), select(table, cols, {"start", "end", "globalTid", "correlationId", "nameId"}));
    std::unordered_map<StringId, StringId> short_names;
    each_event(s, [&](uint64_t row) {
      int64_t start = integer(s, 0, "start", row), end = integer(s, 1, "end", row);
      if (!span(start, end)) return;
      StringId name = string_id(integer(s, 4, "nameId", row), row, "nameId");
      auto [it, inserted] = short_names.try_emplace(name, name);
      if (inserted) it->second = strings_.intern(api_name(strings_.text(name)));
      calls_.push_back({thread(integer(s, 2, "globalTid", row)), start, end - start, it->second,
                        integer(s, 3, "correlationId", row, kNone), kNone, 0});
    });
  }

  void nvtx() {
    auto cols = columns(kNvtx, {"start", "eventType"});
    Stmt s(db_.get(), select(kNvtx, cols, {"start", "end", "eventType", "globalTid", "text", "textId"}));
    each_event(s, [&](uint64_t row) {
      int64_t type = integer(s, 2, "eventType", row);
      if (type != kNvtxMark && type != kNvtxPushPop && type != kNvtxStartEnd) {
        ++out_.skipped["NVTX_EVENTS rows other than marks and ranges (domains, categories, ...)"];
        return;
      }
      int64_t start = integer(s, 0, "start", row);
      int64_t text_id = integer(s, 5, "textId", row, -1);
      StringId name = text_id >= 0 ? string_id(text_id, row, "textId") : strings_.intern(s.text(4));
      uint32_t th = thread(integer(s, 3, "globalTid", row, 0));
      if (type == kNvtxMark) {
        if (instant(start))
          out_.instants.push_back({.thread = th, .time = start, .name = name, .kind = SpanKind::user});
        return;
      }
      int64_t end = integer(s, 1, "end", row, -1);
      if (end < 0) {
        ++out_.skipped["NVTX ranges that never ended"];
        return;
      }
      if (!span(start, end)) return;
      out_.host_spans.push_back(
          {.thread = th, .start = start, .dur = end - start, .name = name, .kind = SpanKind::user});
    });
  }

  // Device memory the driver handed out (cudaMalloc and friends) and took
  // back: alloc and free events with running totals per device.
  void memory() {
    auto cols = columns(kMemory, {"start", "deviceId", "bytes", "memoryOperationType"});
    Stmt s(db_.get(),
           select(kMemory, cols, {"start", "deviceId", "address", "bytes", "memKind", "memoryOperationType"}));
    std::vector<MemoryEventRow> events;
    each_event(s, [&](uint64_t row) {
      std::string kind = mem_kind(integer(s, 4, "memKind", row, 3));
      if (kind != "Device" && kind != "Managed" && kind != "Device Static" && kind != "Managed Static") {
        ++out_.skipped["CUDA_GPU_MEMORY_USAGE_EVENTS rows for host memory"];
        return;
      }
      int64_t oper = integer(s, 5, "memoryOperationType", row);
      auto it = mem_opers_.find(oper);
      MemoryEventKind k = it != mem_opers_.end() ? it->second
                          : oper == 1            ? MemoryEventKind::free
                                                 : MemoryEventKind::alloc;
      MemoryEventRow m{.device = device_id(integer(s, 1, "deviceId", row), row),
                       .time = integer(s, 0, "start", row),
                       .kind = k,
                       .bytes = std::max<int64_t>(0, integer(s, 3, "bytes", row)),
                       .address = uint64_t(integer(s, 2, "address", row, 0))};
      if (instant(m.time)) events.push_back(m);
    });
    std::stable_sort(events.begin(), events.end(),
                     [](const MemoryEventRow& a, const MemoryEventRow& b) { return a.time < b.time; });
    std::map<uint32_t, int64_t> total;
    std::map<std::pair<uint32_t, uint64_t>, int64_t> live;  // (device, address) -> bytes
    for (MemoryEventRow& m : events) {
      if (m.kind == MemoryEventKind::alloc) {
        // Saturating: byte counts in a damaged file can be anything (a
        // total past 2^60 bytes is then left out as unreadable).
        int64_t& t = total[m.device];
        t = m.bytes > kMaxTableTotal - t ? kMaxTableTotal : t + m.bytes;
        if (m.address) live[{m.device, m.address}] = m.bytes;
      } else {
        if (m.bytes == 0 && m.address) {  // a free that does not say its size
          auto l = live.find({m.device, m.address});
          if (l != live.end()) m.bytes = l->second;
        }
        live.erase({m.device, m.address});
        total[m.device] = std::max<int64_t>(0, total[m.device] - m.bytes);
      }
      m.allocated = m.reserved = total[m.device];
      memory_devices_.insert(m.device);
      out_.memory.push_back(m);
    }
  }

  void devices_and_streams() {
    std::map<uint32_t, DeviceRow> devices = gpus_;
    auto ensure = [&](uint32_t id) {
      if (!devices.count(id)) devices[id] = {.id = id, .name = fmt::format("GPU {}", id), .kind = DeviceKind::cuda};
    };
    for (const auto& [device, stream] : streams_) ensure(device);
    for (uint32_t d : memory_devices_) ensure(d);
    for (const auto& [id, d] : devices) out_.devices.push_back(d);
    for (const auto& [device, stream] : streams_) {
      out_.streams.push_back({.device = device, .stream = stream, .name = fmt::format("stream {}", stream)});
    }
  }

  const std::string& path_;
  StringPool& strings_;
  ImportedTrace& out_;
  store::Db db_;
  std::string current_table_;
  std::map<std::string, std::string> kinds_;  // table -> 'table' or 'view'
  std::unordered_map<int64_t, StringId> string_ids_;
  std::map<int64_t, CopyKind> copy_kinds_;
  std::map<int64_t, std::string> mem_kinds_;
  std::map<int64_t, MemoryEventKind> mem_opers_;
  std::unordered_map<int64_t, uint32_t> threads_;
  std::vector<int64_t> thread_order_;
  std::unordered_map<int64_t, StringId> thread_names_;
  std::map<int64_t, std::string> process_names_;
  std::map<uint32_t, DeviceRow> gpus_;
  std::vector<ApiCall> calls_;
  std::vector<PendingOp> ops_;
  std::vector<SyncRecord> sync_records_;
  std::set<std::pair<uint32_t, uint32_t>> streams_;
  std::set<uint32_t> memory_devices_;
};

}  // namespace

bool is_nsys_export(const std::string& path) {
  try {
    store::Db db = store::open_sqlite_read_only(path);
    Stmt s(db.get(),
           "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND (name LIKE 'CUPTI_ACTIVITY_KIND_%' OR "
           "name IN ('NVTX_EVENTS', 'TARGET_INFO_GPU', 'CUDA_GPU_MEMORY_USAGE_EVENTS'))");
    return s.step() && s.int64(0) > 0;
  } catch (const TraceError& e) {
    throw ImportError(e.what());  // unreadable: truncated, not a database, ...
  } catch (const StoreError& e) {
    throw ImportError(fmt::format("{}: {}", path, e.what()));
  }
}

void read_nsys(const std::string& path, StringPool& strings, ImportedTrace& out) {
  NsysReader(path, strings, out).run();
}

}  // namespace loupe::prof::import
