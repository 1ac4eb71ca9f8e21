#include "loupe/prof/trace_reader.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "store/checked_row.h"
#include "store/open_trace.h"
#include "store/small_tables.h"
#include "store/sqlite.h"

namespace loupe::prof {

using store::CheckedRow;
using store::Stmt;
using store::TrackClaim;

namespace {

constexpr int64_t kMinKey = std::numeric_limits<int64_t>::min();

// How one event table is read into its track type. `columns` lists the
// track columns first, then the time column, then the rest in append()
// order, and last the row id (named in messages about a bad row). Every
// value is read through CheckedRow: its type and range are checked.
template <typename Track>
struct TableDef;

template <>
struct TableDef<HostSpans> {
  static constexpr const char* table = "host_spans";
  static constexpr const char* track_cols = "thread";
  static constexpr const char* time_col = "start";
  static constexpr std::array<std::string_view, 8> columns = {"thread", "start",  "dur",      "name",
                                                              "kind",   "depth", "callsite", "id"};
  static constexpr int ntrack = 1;
  static void set_key(HostSpans& t, const CheckedRow& r) { t.thread = r.u32(0); }
  static void append(HostSpans& t, const CheckedRow& r) {
    t.start.push_back(r.integer(1));
    t.dur.push_back(r.integer(2));
    t.name.push_back(r.u32(3));
    t.kind.push_back(r.enumerator<SpanKind>(4));
    t.depth.push_back(r.u32(5));
    t.callsite.push_back(r.u32(6));
  }
};

template <>
struct TableDef<Instants> {
  static constexpr const char* table = "instants";
  static constexpr const char* track_cols = "thread";
  static constexpr const char* time_col = "time";
  static constexpr std::array<std::string_view, 5> columns = {"thread", "time", "name", "kind", "id"};
  static constexpr int ntrack = 1;
  static void set_key(Instants& t, const CheckedRow& r) { t.thread = r.u32(0); }
  static void append(Instants& t, const CheckedRow& r) {
    t.time.push_back(r.integer(1));
    t.name.push_back(r.u32(2));
    t.kind.push_back(r.enumerator<SpanKind>(3));
  }
};

template <>
struct TableDef<Counter> {
  static constexpr const char* table = "counters";
  static constexpr const char* track_cols = "name";
  static constexpr const char* time_col = "time";
  static constexpr std::array<std::string_view, 4> columns = {"name", "time", "value", "id"};
  static constexpr int ntrack = 1;
  static void set_key(Counter& t, const CheckedRow& r) { t.name = r.u32(0); }
  static void append(Counter& t, const CheckedRow& r) {
    t.time.push_back(r.integer(1));
    t.value.push_back(r.real(2));
  }
};

template <>
struct TableDef<DeviceOps> {
  static constexpr const char* table = "device_ops";
  static constexpr const char* track_cols = "device, stream";
  static constexpr const char* time_col = "start";
  static constexpr std::array<std::string_view, 10> columns = {
      "device", "stream", "start", "dur", "kind", "name", "bytes", "copy_kind", "correlation", "id"};
  static constexpr int ntrack = 2;
  static void set_key(DeviceOps& t, const CheckedRow& r) {
    t.device = r.u32(0);
    t.stream = r.u32(1);
  }
  static void append(DeviceOps& t, const CheckedRow& r) {
    t.start.push_back(r.integer(2));
    t.dur.push_back(r.integer(3));
    t.kind.push_back(r.enumerator<DeviceOpKind>(4));
    t.name.push_back(r.u32(5));
    t.bytes.push_back(r.non_negative(6));
    t.copy_kind.push_back(r.enumerator<CopyKind>(7));
    t.correlation.push_back(uint64_t(r.integer(8)));
  }
};

template <>
struct TableDef<Launches> {
  static constexpr const char* table = "launches";
  static constexpr const char* track_cols = "thread";
  static constexpr const char* time_col = "start";
  static constexpr std::array<std::string_view, 8> columns = {"thread", "start",  "dur",         "name",
                                                              "device", "stream", "correlation", "id"};
  static constexpr int ntrack = 1;
  static void set_key(Launches& t, const CheckedRow& r) { t.thread = r.u32(0); }
  static void append(Launches& t, const CheckedRow& r) {
    t.start.push_back(r.integer(1));
    t.dur.push_back(r.integer(2));
    t.name.push_back(r.u32(3));
    t.device.push_back(r.u32(4));
    t.stream.push_back(r.u32(5));
    t.correlation.push_back(uint64_t(r.integer(6)));
  }
};

template <>
struct TableDef<Transfers> {
  static constexpr const char* table = "transfers";
  static constexpr const char* track_cols = "thread";
  static constexpr const char* time_col = "start";
  static constexpr std::array<std::string_view, 12> columns = {
      "thread",   "start",       "dur",      "device",      "direction", "bytes",
      "synchronous", "implicit", "host_memory", "callsite", "correlation", "id"};
  static constexpr int ntrack = 1;
  static void set_key(Transfers& t, const CheckedRow& r) { t.thread = r.u32(0); }
  static void append(Transfers& t, const CheckedRow& r) {
    t.start.push_back(r.integer(1));
    t.dur.push_back(r.integer(2));
    t.device.push_back(r.u32(3));
    t.direction.push_back(r.enumerator<CopyKind>(4));
    t.bytes.push_back(r.non_negative(5));
    t.synchronous.push_back(r.flag(6));
    t.implicit.push_back(r.flag(7));
    t.host_memory.push_back(r.enumerator<HostMemory>(8));
    t.callsite.push_back(r.u32(9));
    t.correlation.push_back(uint64_t(r.integer(10)));
  }
};

template <>
struct TableDef<MemoryEvents> {
  static constexpr const char* table = "memory_events";
  static constexpr const char* track_cols = "device";
  static constexpr const char* time_col = "time";
  static constexpr std::array<std::string_view, 9> columns = {
      "device", "time", "kind", "bytes", "address", "allocated", "reserved", "callsite", "id"};
  static constexpr int ntrack = 1;
  static void set_key(MemoryEvents& t, const CheckedRow& r) { t.device = r.u32(0); }
  static void append(MemoryEvents& t, const CheckedRow& r) {
    t.time.push_back(r.integer(1));
    t.kind.push_back(r.enumerator<MemoryEventKind>(2));
    t.bytes.push_back(r.non_negative(3));
    t.address.push_back(uint64_t(r.integer(4)));
    // Levels, not summed, but compared and added across devices.
    t.allocated.push_back(r.in_range(5, 0, kMaxTableTotal - 1));
    t.reserved.push_back(r.in_range(6, 0, kMaxTableTotal - 1));
    t.callsite.push_back(r.u32(7));
  }
};

template <>
struct TableDef<Compiles> {
  static constexpr const char* table = "compiles";
  static constexpr const char* track_cols = "thread";
  static constexpr const char* time_col = "start";
  static constexpr std::array<std::string_view, 16> columns = {
      "thread",     "start",  "dur",     "function", "signature", "kind",     "reason",          "trace_ns",
      "optimize_ns", "codegen_ns", "nodes", "kernels", "ir",       "callsite", "function_object", "id"};
  static constexpr int ntrack = 1;
  static void set_key(Compiles& t, const CheckedRow& r) { t.thread = r.u32(0); }
  static void append(Compiles& t, const CheckedRow& r) {
    t.start.push_back(r.integer(1));
    t.dur.push_back(r.integer(2));
    t.function.push_back(r.u32(3));
    t.signature.push_back(r.u32(4));
    t.kind.push_back(r.enumerator<CompileKind>(5));
    t.reason.emplace_back(r.text(6));
    t.trace_ns.push_back(r.non_negative(7));
    t.optimize_ns.push_back(r.non_negative(8));
    t.codegen_ns.push_back(r.non_negative(9));
    t.nodes.push_back(r.u32(10));
    t.kernels.push_back(r.u32(11));
    t.ir.emplace_back(r.text(12));
    t.callsite.push_back(r.u32(13));
    t.function_object.push_back(uint64_t(r.integer(14)));
  }
};

template <>
struct TableDef<Steps> {
  static constexpr const char* table = "steps";
  static constexpr const char* track_cols = "thread";
  static constexpr const char* time_col = "start";
  static constexpr std::array<std::string_view, 5> columns = {"thread", "start", "dur", "number", "id"};
  static constexpr int ntrack = 1;
  static void set_key(Steps& t, const CheckedRow& r) { t.thread = r.u32(0); }
  static void append(Steps& t, const CheckedRow& r) {
    t.start.push_back(r.integer(1));
    t.dur.push_back(r.integer(2));
    t.number.push_back(r.integer(3));
  }
};

// A key in a table's clustered order: (track a, track b, time).
struct Key {
  int64_t a = kMinKey, b = kMinKey, t = kMinKey;
};

// A contiguous key range of one table, read by one worker.
struct Unit {
  int table;       // index into the loader's table list
  bool has_lo, has_hi;
  Key lo, hi;
  int64_t rows_hint;
};

// At most this many units per table, whatever the tracks table claims: a
// file listing a million tracks must not make a million queries.
constexpr size_t kMaxUnitsPerTable = 256;

// Reads every track of one table, split into units for parallel reading.
class TableLoaderBase {
 public:
  virtual ~TableLoaderBase() = default;
  virtual const char* name() const = 0;
  virtual void plan(std::vector<Unit>& units, int index, const std::vector<TrackClaim>& tracks, int64_t target,
                    int64_t max_rows) = 0;
  virtual void read(sqlite3* db, size_t unit_slot, const Unit& unit) = 0;
  virtual void finish() = 0;
  // Throws StoreError unless the loaded tracks are exactly those claimed.
  virtual void verify(const std::vector<TrackClaim>& claims) const = 0;
};

template <typename Track>
class TableLoader : public TableLoaderBase {
 public:
  using D = TableDef<Track>;
  explicit TableLoader(std::vector<Track>& out) : out_(out) {}

  const char* name() const override { return D::table; }

  // The claims of the tracks table only shape the work (where units are
  // cut, how much to reserve): any plan reads every row, and `max_rows`
  // (what the file's size allows) bounds what a claim can make us reserve.
  void plan(std::vector<Unit>& units, int index, const std::vector<TrackClaim>& tracks, int64_t target,
            int64_t max_rows) override {
    // Boundaries between units: track starts, and time splits in long tracks.
    std::vector<std::pair<Key, int64_t>> cuts;  // (boundary key, rows before next cut)
    for (const TrackClaim& t : tracks) {
      int64_t rows = std::min(t.rows, max_rows);
      int64_t pieces = std::clamp<int64_t>(rows / std::max<int64_t>(target, 1), 1, 64);
      int64_t span = std::max<int64_t>(t.last - t.first, 0);
      for (int64_t p = 0; p < pieces; ++p) {
        Key k{t.a, D::ntrack == 2 ? t.b : kMinKey, p == 0 ? kMinKey : t.first + span / pieces * p};
        cuts.push_back({k, rows / pieces});
      }
    }
    cuts = thin_out(std::move(cuts), max_rows);
    first_unit_ = units.size();
    if (cuts.empty()) {
      units.push_back({index, false, false, {}, {}, 0});
    } else {
      for (size_t i = 0; i < cuts.size(); ++i) {
        bool has_lo = i > 0, has_hi = i + 1 < cuts.size();
        units.push_back({index, has_lo, has_hi, cuts[i].first, has_hi ? cuts[i + 1].first : Key{}, cuts[i].second});
      }
    }
    pieces_.assign(units.size() - first_unit_, {});
  }

  void read(sqlite3* db, size_t unit_slot, const Unit& u) override {
    std::string where;
    auto key_expr = [] { return fmt::format("({}, {})", D::track_cols, D::time_col); };
    auto key_params = [](int first) {
      return D::ntrack == 2 ? fmt::format("(?{}, ?{}, ?{})", first, first + 1, first + 2)
                            : fmt::format("(?{}, ?{})", first, first + 1);
    };
    if (u.has_lo) where += fmt::format(" WHERE {} >= {}", key_expr(), key_params(1));
    if (u.has_hi) where += fmt::format("{} {} < {}", u.has_lo ? " AND" : " WHERE", key_expr(), key_params(4));
    Stmt s(db, fmt::format("SELECT {} FROM {}{} ORDER BY {}, {}, id", column_list(), D::table, where, D::track_cols,
                           D::time_col));
    auto bind_key = [&](int first, const Key& k) {
      s.bind(first, k.a);
      if (D::ntrack == 2) {
        s.bind(first + 1, k.b);
        s.bind(first + 2, k.t);
      } else {
        s.bind(first + 1, k.t);
      }
    };
    if (u.has_lo) bind_key(1, u.lo);
    if (u.has_hi) bind_key(4, u.hi);

    std::vector<Track>& pieces = pieces_[unit_slot - first_unit_];
    Track* cur = nullptr;
    int64_t cur_a = 0, cur_b = 0;
    CheckedRow row(s, D::columns);
    while (s.step()) {
      try {
        int64_t a = s.int64(0), b = D::ntrack == 2 ? s.int64(1) : 0;
        if (cur == nullptr || a != cur_a || b != cur_b) {
          pieces.emplace_back();
          cur = &pieces.back();
          D::set_key(*cur, row);
          cur_a = a;
          cur_b = b;
          reserve(*cur, u.rows_hint);
        }
        D::append(*cur, row);
      } catch (const StoreError& e) {
        throw StoreError(fmt::format("row id {}: {}", s.int64(int(D::columns.size()) - 1), e.what()));
      }
    }
  }

  // Joins the pieces of each track, column by column, freeing each piece's
  // column as soon as it is copied so that memory peaks at one column.
  void finish() override {
    out_.clear();
    for (auto& unit_pieces : pieces_) {
      for (Track& p : unit_pieces) {
        if (!out_.empty() && same_track(out_.back(), p)) {
          append_columns(out_.back(), p);
        } else {
          out_.push_back(std::move(p));
        }
      }
      unit_pieces.clear();
      unit_pieces.shrink_to_fit();
    }
    for (Track& t : out_) {
      std::apply([](auto&... col) { (shrink(col), ...); }, t.columns());
    }
  }

  void verify(const std::vector<TrackClaim>& claims) const override {
    auto key_text = [](int64_t a, int64_t b) {
      return D::ntrack == 2 ? fmt::format("({}, {})", a, b) : fmt::format("{}", a);
    };
    if (claims.size() != out_.size()) {
      throw StoreError(fmt::format("the tracks table lists {} tracks of {}, the table has {}; the file was damaged "
                                   "or edited",
                                   claims.size(), D::table, out_.size()));
    }
    for (size_t i = 0; i < out_.size(); ++i) {
      const Track& t = out_[i];
      auto [a, b] = key_of(t);
      TrackClaim have{a, b, int64_t(t.size()), first_time(t), last_time(t)};
      const TrackClaim& c = claims[i];
      if (c.a != have.a || c.b != have.b || c.rows != have.rows || c.first != have.first || c.last != have.last) {
        throw StoreError(fmt::format("the tracks table says track {} of {} holds {} rows from {} to {} ns; its rows "
                                     "say track {}, {} rows from {} to {} ns; the file was damaged or edited",
                                     key_text(c.a, c.b), D::table, c.rows, c.first, c.last, key_text(a, b),
                                     have.rows, have.first, have.last));
      }
    }
  }

 private:
  static std::string column_list() {
    std::string list;
    for (std::string_view c : D::columns) list += fmt::format("{}{}", list.empty() ? "" : ", ", c);
    return list;
  }
  // The track's key columns, as D::track_cols names them.
  static std::pair<int64_t, int64_t> key_of(const Track& t) {
    if constexpr (std::is_same_v<Track, DeviceOps>) return {t.device, t.stream};
    else if constexpr (std::is_same_v<Track, MemoryEvents>) return {t.device, 0};
    else if constexpr (std::is_same_v<Track, Counter>) return {t.name, 0};
    else return {t.thread, 0};
  }
  // The extent as the writer records it: first start, last end.
  static int64_t first_time(const Track& t) {
    if constexpr (requires { t.start; }) return t.start.front();
    else return t.time.front();
  }
  static int64_t last_time(const Track& t) {
    if constexpr (requires { t.start; }) {
      int64_t last = t.end(0);
      for (size_t i = 1; i < t.size(); ++i) last = std::max(last, t.end(i));
      return last;
    } else {
      return t.time.back();
    }
  }
  // Merges neighbouring cuts until at most kMaxUnitsPerTable remain.
  static std::vector<std::pair<Key, int64_t>> thin_out(std::vector<std::pair<Key, int64_t>> cuts, int64_t max_rows) {
    if (cuts.size() <= kMaxUnitsPerTable) return cuts;
    size_t every = (cuts.size() + kMaxUnitsPerTable - 1) / kMaxUnitsPerTable;
    std::vector<std::pair<Key, int64_t>> kept;
    for (size_t i = 0; i < cuts.size(); ++i) {
      if (i % every == 0) kept.push_back({cuts[i].first, 0});
      kept.back().second = std::min(kept.back().second + cuts[i].second, max_rows);
    }
    return kept;
  }
  static bool same_track(const Track& x, const Track& y) { return key_of(x) == key_of(y); }
  static void reserve(Track& t, int64_t hint) {
    size_t n = size_t(std::clamp<int64_t>(hint, 0, int64_t(1) << 26));
    std::apply([n](auto&... col) { (col.reserve(n), ...); }, t.columns());
  }
  template <typename V>
  static void shrink(V& v) {
    if (v.capacity() > v.size() + v.size() / 8 + 16) v.shrink_to_fit();
  }
  static void append_columns(Track& into, Track& from) {
    auto dst = into.columns();
    auto src = from.columns();
    [&]<size_t... I>(std::index_sequence<I...>) {
      (append_one(std::get<I>(dst), std::get<I>(src)), ...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(dst)>>{});
  }
  template <typename V>
  static void append_one(V& dst, V& src) {
    V joined;
    joined.reserve(dst.size() + src.size());
    std::move(dst.begin(), dst.end(), std::back_inserter(joined));
    std::move(src.begin(), src.end(), std::back_inserter(joined));
    dst = std::move(joined);
    V().swap(src);
  }

  std::vector<Track>& out_;
  size_t first_unit_ = 0;
  std::vector<std::vector<Track>> pieces_;  // per unit, in key order
};

int64_t file_bytes(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
}

std::string file_error(const std::string& path, const std::string& what) {
  return fmt::format("{}: {}", path, what);
}

template <typename Track>
void validate_track(const std::string& path, const char* table, const TraceModel& m, Track& t) {
  const size_t nstrings = m.strings.size();
  auto bad = [&](const std::string& what) { throw TraceError(file_error(path, fmt::format("{}: {}", table, what))); };
  auto check_string = [&](const std::vector<StringId>& col, const char* column) {
    for (StringId id : col) {
      if (id >= nstrings) bad(fmt::format("{} refers to string id {}, which the strings table lacks", column, id));
    }
  };
  auto check_callsites = [&](const std::vector<uint32_t>& col) {
    for (uint32_t id : col) {
      if (id != 0 && m.callsite(id) == nullptr) bad(fmt::format("callsite {} is not in the callsites table", id));
    }
  };
  // Times within +-2^62 ns (trace_format.h), so that analyses can take
  // any difference of two times without overflow.
  if constexpr (requires { t.dur; }) {
    for (size_t i = 0; i < t.size(); ++i) {
      int64_t start = t.start[i], dur = t.dur[i];
      if (dur < 0) bad(fmt::format("negative duration {} ns", dur));
      if (!is_trace_time(start) || dur >= kMaxTraceTimeNs - start) {
        bad(fmt::format("start + dur ({} + {} ns) lies outside the +-2^62 ns a trace can hold", start, dur));
      }
    }
  } else {
    for (int64_t time : t.time) {
      if (!is_trace_time(time)) bad(fmt::format("time {} ns lies outside the +-2^62 ns a trace can hold", time));
    }
  }
  if constexpr (requires { t.name; }) {
    if constexpr (std::is_same_v<decltype(t.name), std::vector<StringId>>) check_string(t.name, "name");
  }
  if constexpr (requires { t.function; }) {
    check_string(t.function, "function");
    check_string(t.signature, "signature");
  }
  if constexpr (requires { t.callsite; }) check_callsites(t.callsite);
  if constexpr (std::is_same_v<Track, Counter>) {
    if (t.name >= nstrings) bad(fmt::format("counter name refers to missing string id {}", t.name));
  }
}

// The sums of a table's durations, byte counts and phase times stay under
// kMaxTableTotal (trace_format.h), so that analyses can total them.
template <typename Track>
void check_totals(const std::string& path, const char* table, const std::vector<Track>& tracks) {
  auto total_of = [&](const char* column, auto column_of) {
    int64_t total = 0;
    for (const Track& t : tracks) {
      for (int64_t v : column_of(t)) {
        if (!add_to_table_total(total, v)) {
          throw TraceError(file_error(path, fmt::format("{}: the values of '{}' add up to 2^60 or more (36 years "
                                                        "of nanoseconds, an exbibyte); the file was damaged or edited",
                                                        table, column)));
        }
      }
    }
  };
  using Column = const std::vector<int64_t>&;
  if constexpr (requires(const Track& t) { t.dur; }) total_of("dur", [](const Track& t) -> Column { return t.dur; });
  if constexpr (requires(const Track& t) { t.bytes; }) {
    total_of("bytes", [](const Track& t) -> Column { return t.bytes; });
  }
  if constexpr (std::is_same_v<Track, Compiles>) {
    total_of("trace_ns", [](const Track& t) -> Column { return t.trace_ns; });
    total_of("optimize_ns", [](const Track& t) -> Column { return t.optimize_ns; });
    total_of("codegen_ns", [](const Track& t) -> Column { return t.codegen_ns; });
  }
}

template <typename Track>
void validate_table(const std::string& path, const char* table, const TraceModel& m, std::vector<Track>& tracks) {
  for (Track& t : tracks) validate_track(path, table, m, t);
  check_totals(path, table, tracks);
}

}  // namespace

TraceModel load_trace(const std::string& path, const ReadOptions& options) {
  store::Db db = store::open_trace(path);  // throws TraceError
  TraceModel m;
  m.path = path;
  std::map<std::string, std::vector<TrackClaim>> claims;
  try {
    // One read transaction: one snapshot of the file, even while a capture
    // is still writing it.
    store::exec(db.get(), "BEGIN");
    m.info = store::read_meta(db.get());
    m.strings = store::read_strings(db.get());
    m.devices = store::read_devices(db.get());
    m.streams = store::read_streams(db.get());
    m.threads = store::read_threads(db.get());
    m.callsites = store::read_callsites(db.get(), m.strings.size());
    claims = store::read_tracks(db.get());

    std::vector<std::unique_ptr<TableLoaderBase>> loaders;
    loaders.push_back(std::make_unique<TableLoader<HostSpans>>(m.host_spans));
    loaders.push_back(std::make_unique<TableLoader<Instants>>(m.instants));
    loaders.push_back(std::make_unique<TableLoader<Counter>>(m.counters));
    loaders.push_back(std::make_unique<TableLoader<DeviceOps>>(m.device_ops));
    loaders.push_back(std::make_unique<TableLoader<Launches>>(m.launches));
    loaders.push_back(std::make_unique<TableLoader<Transfers>>(m.transfers));
    loaders.push_back(std::make_unique<TableLoader<MemoryEvents>>(m.memory));
    loaders.push_back(std::make_unique<TableLoader<Compiles>>(m.compiles));
    loaders.push_back(std::make_unique<TableLoader<Steps>>(m.steps));

    // No claim can make us expect more rows than the file has room for
    // (a row takes at least 4 bytes on disk).
    const int64_t max_rows = std::max<int64_t>(file_bytes(path) / 4, 1);
    int64_t total_rows = 0;
    for (auto& [tbl, list] : claims) {
      for (const TrackClaim& t : list) total_rows = std::min(total_rows + std::min(t.rows, max_rows), max_rows);
    }
    unsigned nthreads = options.threads ? options.threads : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    // A file still being written is read on one connection, in the one
    // snapshot opened above: several connections would each see a
    // different commit.
    bool finished = m.info.status == "complete" || m.info.status == "imported";
    if (!finished) nthreads = 1;
    int64_t target = std::max<int64_t>(total_rows / (int64_t(nthreads) * 4), 1 << 18);

    std::vector<Unit> units;
    for (size_t i = 0; i < loaders.size(); ++i) {
      loaders[i]->plan(units, int(i), claims[loaders[i]->name()], target, max_rows);
    }
    // Largest first, so that the last unit to finish is a small one.
    std::vector<size_t> order(units.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return units[x].rows_hint > units[y].rows_hint; });

    std::atomic<size_t> next{0};
    std::string first_error;
    std::mutex error_mu;
    auto worker = [&](sqlite3* conn) {
      for (;;) {
        size_t k = next.fetch_add(1);
        if (k >= order.size()) return;
        const Unit& u = units[order[k]];
        try {
          loaders[size_t(u.table)]->read(conn, order[k], u);
        } catch (const std::exception& e) {
          std::lock_guard lock(error_mu);
          if (first_error.empty()) first_error = fmt::format("{}: {}", loaders[size_t(u.table)]->name(), e.what());
          next.store(order.size());
          return;
        }
      }
    };
    std::vector<store::Db> extra;
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < nthreads; ++i) extra.push_back(store::open_trace(path));
    for (auto& conn : extra) pool.emplace_back(worker, conn.get());
    worker(db.get());
    for (auto& t : pool) t.join();
    if (!first_error.empty()) throw TraceError(file_error(path, first_error));
    for (auto& l : loaders) l->finish();
    store::exec(db.get(), "COMMIT");

    validate_table(path, "host_spans", m, m.host_spans);
    validate_table(path, "instants", m, m.instants);
    validate_table(path, "counters", m, m.counters);
    validate_table(path, "device_ops", m, m.device_ops);
    validate_table(path, "launches", m, m.launches);
    validate_table(path, "transfers", m, m.transfers);
    validate_table(path, "memory_events", m, m.memory);
    validate_table(path, "compiles", m, m.compiles);
    validate_table(path, "steps", m, m.steps);
    // The rows are valid; the tracks table must describe exactly them.
    for (auto& l : loaders) l->verify(claims[l->name()]);
  } catch (const StoreError& e) {
    throw TraceError(file_error(path, e.what()));
  } catch (const std::bad_alloc&) {
    throw TraceError(file_error(path, "out of memory while loading the trace"));
  }

  // The extent of the trace.
  bool any = false;
  auto extend = [&](int64_t s, int64_t e) {
    if (!any) {
      m.start_ns = s;
      m.end_ns = e;
      any = true;
    } else {
      m.start_ns = std::min(m.start_ns, s);
      m.end_ns = std::max(m.end_ns, e);
    }
  };
  auto extend_spans = [&](const auto& tracks_of) {
    for (const auto& t : tracks_of) {
      if (t.size() == 0) continue;
      int64_t last = 0;
      for (size_t i = 0; i < t.size(); ++i) last = std::max(last, t.end(i));
      extend(t.start.front(), last);
    }
  };
  auto extend_times = [&](const auto& tracks_of) {
    for (const auto& t : tracks_of) {
      if (t.size() > 0) extend(t.time.front(), t.time.back());
    }
  };
  extend_spans(m.host_spans);
  extend_spans(m.device_ops);
  extend_spans(m.launches);
  extend_spans(m.transfers);
  extend_spans(m.compiles);
  extend_spans(m.steps);
  extend_times(m.instants);
  extend_times(m.counters);
  extend_times(m.memory);
  return m;
}

void check_trace(const std::string& path) { store::open_trace(path); }

}  // namespace loupe::prof
