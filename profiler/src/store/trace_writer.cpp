#include "loupe/prof/trace_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loupe/prof/output_file.h"
#include "loupe/prof/trace_format.h"
#include "store/row_place.h"
#include "store/schema.h"
#include "store/small_tables.h"
#include "store/sqlite.h"

namespace loupe::prof {

using store::Stmt;

namespace {

// Rows per multi-row INSERT: amortises statement overhead without making
// the statement so long that binding dominates (measured in bench/).
constexpr int kRowsPerInsert = 50;

using store::TrackKey;

template <typename Row>
struct Staged {
  Row row;
  int64_t id;
};

// One value as the file stores it: text as TEXT, reals as REAL, anything
// else (ids, enumerations, flags, 64-bit ids as their bit pattern) as an
// INTEGER.
template <typename T>
void bind_value(Stmt& s, int i, const T& v) {
  if constexpr (std::is_same_v<T, std::string>) s.bind_static(i, v);
  else if constexpr (std::is_floating_point_v<T>) s.bind(i, double(v));
  else s.bind(i, int64_t(v));
}

template <typename Row>
struct Traits;

#define LOUPE_COUNT_FIELD(...) +1
#define LOUPE_COUNT_SPAN(...) +3   // start, id, dur
#define LOUPE_COUNT_POINT(...) +2  // time, id
#define LOUPE_BIND_FIELD(name, type, check, init) bind_value(s, c++, r.name);
#define LOUPE_BIND_SPAN(start, dur) \
  bind_value(s, c++, r.start);      \
  bind_value(s, c++, id);           \
  bind_value(s, c++, r.dur);
#define LOUPE_BIND_POINT(time) \
  bind_value(s, c++, r.time);  \
  bind_value(s, c++, id);
#define LOUPE_WRITER_TRAITS(Row, Track, tbl, member)                                                      \
  template <>                                                                                             \
  struct Traits<Row> : store::RowPlace<Row> {                                                             \
    static constexpr int columns =                                                                        \
        0 LOUPE_COLUMNS_##tbl(LOUPE_COUNT_FIELD, LOUPE_COUNT_SPAN, LOUPE_COUNT_POINT, LOUPE_COUNT_FIELD); \
    static void bind(Stmt& s, int i, const Row& r, int64_t id) {                                          \
      int c = i;                                                                                          \
      LOUPE_COLUMNS_##tbl(LOUPE_BIND_FIELD, LOUPE_BIND_SPAN, LOUPE_BIND_POINT, LOUPE_BIND_FIELD)          \
    }                                                                                                     \
  };
LOUPE_EVENT_TABLES(LOUPE_WRITER_TRAITS)
#undef LOUPE_WRITER_TRAITS
#undef LOUPE_BIND_POINT
#undef LOUPE_BIND_SPAN
#undef LOUPE_BIND_FIELD
#undef LOUPE_COUNT_POINT
#undef LOUPE_COUNT_SPAN
#undef LOUPE_COUNT_FIELD

std::string insert_sql(const char* table, int columns, int rows) {
  std::string one = "(?";
  for (int c = 1; c < columns; ++c) one += ",?";
  one += ")";
  std::string sql = fmt::format("INSERT INTO {} VALUES {}", table, one);
  for (int r = 1; r < rows; ++r) sql += "," + one;
  return sql;
}

struct TrackStats {
  int64_t rows = 0;
  int64_t first_start = 0, last_end = 0;
  bool dirty = false;
};
using TrackMap = std::map<std::tuple<std::string_view, int64_t, int64_t>, TrackStats>;

// One event table: its staged rows and its two insert statements.
template <typename Row>
class EventTable {
 public:
  using T = Traits<Row>;

  void prepare(sqlite3* db) {
    insert_many_ = Stmt(db, insert_sql(T::table, T::columns, kRowsPerInsert));
    insert_one_ = Stmt(db, insert_sql(T::table, T::columns, 1));
  }
  void add(Row row) { staged_.push_back({std::move(row), next_id_++}); }
  size_t staged() const { return staged_.size(); }
  void discard() {
    staged_.clear();
    sorted_.clear();
  }

  // Writes the staged rows in key order and folds them into `tracks`.
  void write(TrackMap& tracks) {
    sort_by_key();
    const std::vector<Staged<Row>>& rows = sorted_;
    size_t n = rows.size(), i = 0;
    for (; i + kRowsPerInsert <= n; i += kRowsPerInsert) {
      for (int r = 0; r < kRowsPerInsert; ++r) {
        const Staged<Row>& row = rows[i + size_t(r)];
        T::bind(insert_many_, 1 + r * T::columns, row.row, row.id);
      }
      insert_many_.step();
      insert_many_.reset();
    }
    for (; i < n; ++i) {
      T::bind(insert_one_, 1, rows[i].row, rows[i].id);
      insert_one_.step();
      insert_one_.reset();
    }
    // Rows are in track order, so each track's stats are updated once.
    for (size_t j = 0; j < n;) {
      TrackKey key = T::track(rows[j].row);
      TrackStats& t = tracks[{T::table, key.a, key.b}];
      int64_t first = T::start(rows[j].row), last = T::end(rows[j].row);
      size_t k = j;
      for (; k < n && T::track(rows[k].row) == key; ++k) last = std::max(last, T::end(rows[k].row));
      if (t.rows == 0) {
        t.first_start = first;
        t.last_end = last;
      } else {
        t.first_start = std::min(t.first_start, first);
        t.last_end = std::max(t.last_end, last);
      }
      t.rows += int64_t(k - j);
      t.dirty = true;
      j = k;
    }
  }

  // Moves the staged rows into sorted_ in (track, start, id) order, the
  // order they are read back in (staged rows are in id order). Rows are
  // moved rather than indexed so that binding reads memory in order.
  void sort_by_key() {
    std::vector<uint32_t> order =
        store::file_order<Row>(staged_.size(), [&](size_t i) -> const Row& { return staged_[i].row; });
    sorted_.resize(staged_.size());
    for (size_t i = 0; i < order.size(); ++i) sorted_[i] = std::move(staged_[order[i]]);
  }

  void finalize() {
    insert_many_ = Stmt();
    insert_one_ = Stmt();
  }

  void clear_after_commit() {
    staged_.clear();
    sorted_.clear();
    if (staged_.capacity() > (size_t(1) << 20)) {
      staged_.shrink_to_fit();
      sorted_.shrink_to_fit();
    }
  }

 private:
  std::vector<Staged<Row>> staged_, sorted_;
  int64_t next_id_ = 0;
  Stmt insert_many_, insert_one_;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct TraceWriter::Impl {
  std::string path;
  bool live = true;
  std::unique_ptr<OutputFile> output;  // null for a trace in memory
  store::Db db;

  std::unordered_map<std::string, StringId, StringHash, std::equal_to<>> string_ids;
  std::vector<const std::string*> strings_by_id;
  size_t strings_written = 0;

  std::map<uint32_t, DeviceRow> devices;
  std::map<std::pair<uint32_t, uint32_t>, StreamRow> streams;
  std::map<uint32_t, ThreadRow> threads;
  std::map<uint32_t, CallSiteRow> callsites;
  std::map<std::string, std::string, std::less<>> meta;
  std::vector<uint32_t> dirty_devices, dirty_threads, dirty_callsites;
  std::vector<std::pair<uint32_t, uint32_t>> dirty_streams;
  std::vector<std::string> dirty_meta;

#define LOUPE_EVENT_TABLE(Row, Track, table, member) EventTable<Row> table;
  LOUPE_EVENT_TABLES(LOUPE_EVENT_TABLE)
#undef LOUPE_EVENT_TABLE
  TrackMap tracks;
  uint64_t committed = 0;

  Stmt insert_string, put_device, put_stream, put_thread, put_callsite, put_meta, put_track;
  Stmt begin, commit_tx, rollback;

  template <typename F>
  void for_each_table(F&& f) {
#define LOUPE_VISIT_TABLE(Row, Track, table, member) f(table);
    LOUPE_EVENT_TABLES(LOUPE_VISIT_TABLE)
#undef LOUPE_VISIT_TABLE
  }
  uint64_t staged() {
    uint64_t n = 0;
    for_each_table([&](auto& t) { n += t.staged(); });
    return n;
  }
  void write_all();
  void roll_back();
  void prepare_statements();
  void finalize_statements();
  void publish();
};

namespace {

store::Db open_database(const std::string& file) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  store::Db db(raw);
  if (rc != SQLITE_OK) throw StoreError(db.error());
  return db;
}

// The schema and the enumeration tables, written without a journal: the
// file is new and not at its path yet, so a failure only discards it.
void create_schema(sqlite3* db, int page_size) {
  // Larger pages hold more rows per B-tree page: fewer pages to balance
  // and less per-page overhead on disk (see bench/writer_bench.cpp).
  store::exec(db, fmt::format("PRAGMA page_size={}", page_size).c_str());
  store::exec(db, "PRAGMA journal_mode=OFF");
  store::exec(db, "PRAGMA synchronous=OFF");
  store::exec(db, "PRAGMA cache_size=-32768");
  store::exec(db, fmt::format("PRAGMA application_id={}", kApplicationId).c_str());
  store::exec(db, fmt::format("PRAGMA user_version={}", pack_user_version(kFormatMajor, kFormatMinor)).c_str());
  store::exec(db, "BEGIN");
  store::exec(db, store::schema_sql(), "cannot create schema");
  for (const store::EnumTable& e : store::enum_tables()) {
    Stmt ins(db, fmt::format("INSERT INTO {}(id, name) VALUES (?, ?)", e.table));
    for (size_t i = 0; i < e.names.size(); ++i) {
      ins.bind(1, int64_t(i));
      ins.bind_static(2, e.names[i]);
      ins.step();
      ins.reset();
    }
  }
  store::exec(db, "COMMIT");
}

}  // namespace

void TraceWriter::Impl::prepare_statements() {
  sqlite3* d = db.get();
  insert_string = Stmt(d, "INSERT INTO strings(id, text) VALUES (?, ?)");
  put_device = Stmt(d, "INSERT OR REPLACE INTO devices VALUES (?, ?, ?, ?, ?, ?)");
  put_stream = Stmt(d, "INSERT OR REPLACE INTO streams VALUES (?, ?, ?)");
  put_thread = Stmt(d, "INSERT OR REPLACE INTO threads VALUES (?, ?, ?, ?, ?)");
  put_callsite = Stmt(d, "INSERT OR REPLACE INTO callsites VALUES (?, ?, ?, ?, ?)");
  put_meta = Stmt(d, "INSERT OR REPLACE INTO meta VALUES (?, ?)");
  put_track = Stmt(d, "INSERT OR REPLACE INTO tracks VALUES (?, ?, ?, ?, ?, ?)");
  begin = Stmt(d, "BEGIN");
  commit_tx = Stmt(d, "COMMIT");
  rollback = Stmt(d, "ROLLBACK");
  for_each_table([&](auto& t) { t.prepare(d); });
}

// Ends a failed transaction, if one is open, undoing what it wrote.
void TraceWriter::Impl::roll_back() {
  if (sqlite3_get_autocommit(db.get())) return;
  try {
    rollback.step();
  } catch (const StoreError&) {
  }
  rollback.reset();
}

void TraceWriter::Impl::finalize_statements() {
  for (Stmt* s : {&insert_string, &put_device, &put_stream, &put_thread, &put_callsite, &put_meta, &put_track, &begin,
                  &commit_tx, &rollback}) {
    *s = Stmt();
  }
  for_each_table([](auto& t) { t.finalize(); });
}

// A live trace takes its path once it holds its schema and first meta:
// from then on it is written in place, in WAL mode, where a reader (and a
// crash) finds it. The connection is reopened at the path, because SQLite
// names the WAL file after the path it opened.
void TraceWriter::Impl::publish() {
  finalize_statements();
  db = store::Db();
  output->commit();
  db = open_database(output->target());
  sqlite3* d = db.get();
  store::exec(d, "PRAGMA journal_mode=WAL");
  // NORMAL in WAL mode: a commit survives the process being killed; only
  // a power loss can lose the last commits.
  store::exec(d, "PRAGMA synchronous=NORMAL");
  store::exec(d, "PRAGMA cache_size=-32768");
  prepare_statements();
}

TraceWriter::TraceWriter(const std::string& path, const WriterOptions& options) : impl_(new Impl) {
  Impl& w = *impl_;
  w.path = path;
  w.live = options.live;
  try {
    std::string file = path;
    if (path != ":memory:") {
      w.output = std::make_unique<OutputFile>(path, options.inputs);
      file = w.output->temp_path();
    }
    w.db = open_database(file);
    create_schema(w.db.get(), options.page_size);
    w.prepare_statements();
  } catch (const FileError& e) {
    throw StoreError(fmt::format("cannot create trace {}", e.what()));
  } catch (const StoreError& e) {
    throw StoreError(fmt::format("cannot create trace '{}': {}", path, e.what()));
  }
  intern("");  // string id 0 is the empty string
  for (const auto& [key, value] : store::first_meta(options)) set_meta(key, value);
  if (w.live && w.output) {
    commit();
    try {
      w.publish();
    } catch (const FileError& e) {
      throw StoreError(fmt::format("cannot create trace {}", e.what()));
    } catch (const StoreError& e) {
      throw StoreError(fmt::format("cannot create trace '{}': {}", path, e.what()));
    }
  }
}

TraceWriter::~TraceWriter() = default;

StringId TraceWriter::intern(std::string_view text) {
  Impl& w = *impl_;
  auto it = w.string_ids.find(text);
  if (it != w.string_ids.end()) return it->second;
  StringId id = StringId(w.strings_by_id.size());
  auto [pos, inserted] = w.string_ids.emplace(std::string(text), id);
  w.strings_by_id.push_back(&pos->first);
  return id;
}

std::string_view TraceWriter::text(StringId id) const {
  const Impl& w = *impl_;
  return id < w.strings_by_id.size() ? std::string_view(*w.strings_by_id[id]) : std::string_view();
}

void TraceWriter::put(const DeviceRow& row) {
  impl_->devices[row.id] = row;
  impl_->dirty_devices.push_back(row.id);
}
void TraceWriter::put(const StreamRow& row) {
  impl_->streams[{row.device, row.stream}] = row;
  impl_->dirty_streams.push_back({row.device, row.stream});
}
void TraceWriter::put(const ThreadRow& row) {
  impl_->threads[row.id] = row;
  impl_->dirty_threads.push_back(row.id);
}
void TraceWriter::put(const CallSiteRow& row) {
  impl_->callsites[row.id] = row;
  impl_->dirty_callsites.push_back(row.id);
}
void TraceWriter::set_meta(std::string_view key, std::string_view value) {
  impl_->meta[std::string(key)] = std::string(value);
  impl_->dirty_meta.emplace_back(key);
}

#define LOUPE_WRITER_ADD(Row, Track, table, member) \
  void TraceWriter::add(Row row) { impl_->table.add(std::move(row)); }
LOUPE_EVENT_TABLES(LOUPE_WRITER_ADD)
#undef LOUPE_WRITER_ADD

uint64_t TraceWriter::staged() const { return impl_->staged(); }
uint64_t TraceWriter::committed() const { return impl_->committed; }

void TraceWriter::Impl::write_all() {
  for (size_t i = strings_written; i < strings_by_id.size(); ++i) {
    insert_string.run_static(int64_t(i), std::string_view(*strings_by_id[i]));
  }
  for (uint32_t id : dirty_devices) {
    const DeviceRow& d = devices[id];
    put_device.run_static(int64_t(d.id), std::string_view(d.name), int64_t(d.kind), d.memory_capacity, d.copy_bandwidth,
                          std::string_view(d.detail));
  }
  for (auto key : dirty_streams) {
    const StreamRow& s = streams[key];
    put_stream.run_static(int64_t(s.device), int64_t(s.stream), std::string_view(s.name));
  }
  for (uint32_t id : dirty_threads) {
    const ThreadRow& t = threads[id];
    put_thread.run_static(int64_t(t.id), t.process, t.os_tid, std::string_view(t.name), int64_t(t.dropped_events));
  }
  for (uint32_t id : dirty_callsites) {
    const CallSiteRow& c = callsites[id];
    put_callsite.run_static(int64_t(c.id), int64_t(c.file), int64_t(c.line), int64_t(c.function), int64_t(c.parent));
  }
  for_each_table([&](auto& t) { t.write(tracks); });
  for (auto& [key, t] : tracks) {
    if (!t.dirty) continue;
    put_track.run_static(std::string_view(std::get<0>(key)), std::get<1>(key), std::get<2>(key), t.rows, t.first_start,
                         t.last_end);
  }
  for (const std::string& key : dirty_meta) {
    auto it = meta.find(key);
    put_meta.run_static(std::string_view(it->first), std::string_view(it->second));
  }
}

void TraceWriter::commit() {
  Impl& w = *impl_;
  uint64_t rows = w.staged();
  TrackMap tracks_before = w.tracks;
  try {
    w.begin.step();
    w.begin.reset();
    w.write_all();
    w.commit_tx.step();
    w.commit_tx.reset();
  } catch (const StoreError& e) {
    // Undo everything this transaction did; the staged events are lost.
    w.roll_back();
    w.tracks = std::move(tracks_before);
    w.for_each_table([](auto& t) { t.discard(); });
    throw StoreError(fmt::format("cannot write trace '{}': {}", w.path, e.what()));
  }
  w.strings_written = w.strings_by_id.size();
  w.dirty_devices.clear();
  w.dirty_streams.clear();
  w.dirty_threads.clear();
  w.dirty_callsites.clear();
  w.dirty_meta.clear();
  for (auto& [key, t] : w.tracks) t.dirty = false;
  w.for_each_table([](auto& t) { t.clear_after_commit(); });
  w.committed += rows;
}

void TraceWriter::commit_meta_only() {
  Impl& w = *impl_;
  try {
    // A checkpoint moves the log into the database and TRUNCATE empties
    // the log file, giving back its space for this small transaction.
    store::exec(w.db.get(), "PRAGMA wal_checkpoint(TRUNCATE)");
  } catch (const StoreError&) {
  }
  try {
    w.begin.step();
    w.begin.reset();
    for (const std::string& key : w.dirty_meta) {
      auto it = w.meta.find(key);
      w.put_meta.bind_static(1, it->first);
      w.put_meta.bind_static(2, it->second);
      w.put_meta.step();
      w.put_meta.reset();
    }
    w.commit_tx.step();
    w.commit_tx.reset();
  } catch (const StoreError& e) {
    w.roll_back();
    throw StoreError(fmt::format("cannot write trace '{}': {}", w.path, e.what()));
  }
  w.dirty_meta.clear();
}

void TraceWriter::close() {
  Impl& w = *impl_;
  if (!w.db.get()) return;
  commit();
  if (w.live) {
    // Back to a rollback journal: the finished trace is one self-contained
    // file that can be mailed and opened read-only anywhere. Fails
    // harmlessly (the file stays in WAL mode) if a reader has it open.
    try {
      store::exec(w.db.get(), "PRAGMA journal_mode=DELETE");
    } catch (const StoreError&) {
    }
  }
  w.finalize_statements();
  w.db = store::Db();
  if (!w.live && w.output) {
    try {
      w.output->commit();
    } catch (const FileError& e) {
      throw StoreError(fmt::format("cannot write trace {}", e.what()));
    }
  }
}

}  // namespace loupe::prof
