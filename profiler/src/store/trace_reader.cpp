#include "loupe/prof/trace_reader.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>

#include "loupe/prof/trace_tables.h"
#include "store/checked_row.h"
#include "store/model_checks.h"
#include "store/open_trace.h"
#include "store/small_tables.h"
#include "store/sqlite.h"

namespace loupe::prof {

using store::CheckedRow;
using store::Stmt;
using store::TrackClaim;

namespace {

constexpr int64_t kMinKey = std::numeric_limits<int64_t>::min();

// What the reader requires of a stored value: the checks of
// trace_tables.h.
using Check = ColumnCheck;

// One stored value of a column of type T, read through CheckedRow, which
// checks its type and range. Whether a string or call site id names an
// existing row is checked once the whole table is read (validate_table).
template <typename T, Check C>
auto decode(const CheckedRow& r, int col) {
  if constexpr (C == Check::integer) return r.integer(col);
  else if constexpr (C == Check::u32 || C == Check::string || C == Check::callsite) return r.u32(col);
  else if constexpr (C == Check::count) return r.non_negative(col);
  else if constexpr (C == Check::level) return r.in_range(col, 0, kMaxTableTotal - 1);  // compared and added
  else if constexpr (C == Check::id64) return uint64_t(r.integer(col));
  else if constexpr (C == Check::kind) return r.enumerator<T>(col);
  else if constexpr (C == Check::flag) return r.flag(col);
  else if constexpr (C == Check::real) return r.real(col);
  else return std::string(r.text(col));
}

// How one event table is read into its track type, generated from
// trace_tables.h. `columns` lists the track columns first, then the time
// column, then the rest in append() order, and last the row id (named in
// messages about a bad row).
template <typename Track>
struct TableDef;

#define LOUPE_NAME_FIELD(name, type, check, init) std::string_view(#name),
#define LOUPE_NAME_SPAN(start, dur) std::string_view(#start), std::string_view(#dur),
#define LOUPE_NAME_POINT(time) std::string_view(#time),
#define LOUPE_COUNT_KEY(...) +1
#define LOUPE_TIME_SPAN(start, dur) #start
#define LOUPE_TIME_POINT(time) #time
#define LOUPE_KEY_VALUE(name, type, check, init) int64_t(t.name),
#define LOUPE_SET_KEY(name, type, check, init) t.name = decode<type, Check::check>(r, c++);
#define LOUPE_APPEND_SPAN(start, dur) \
  t.start.push_back(r.integer(c++));  \
  t.dur.push_back(r.integer(c++));
#define LOUPE_APPEND_POINT(time) t.time.push_back(r.integer(c++));
#define LOUPE_APPEND_COLUMN(name, type, check, init) t.name.push_back(decode<type, Check::check>(r, c++));
#define LOUPE_TABLE_DEF(Row, Track, tbl, member)                                                                    \
  template <>                                                                                                       \
  struct TableDef<Track> {                                                                                          \
    static constexpr const char* table = #tbl;                                                                      \
    static constexpr const char* time_col =                                                                         \
        LOUPE_COLUMNS_##tbl(LOUPE_IGNORE, LOUPE_TIME_SPAN, LOUPE_TIME_POINT, LOUPE_IGNORE);                         \
    static constexpr std::array columns = {LOUPE_COLUMNS_##tbl(LOUPE_NAME_FIELD, LOUPE_NAME_SPAN, LOUPE_NAME_POINT, \
                                                               LOUPE_NAME_FIELD) std::string_view("id")};           \
    static constexpr int ntrack = 0 LOUPE_COLUMNS_##tbl(LOUPE_COUNT_KEY, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_IGNORE); \
    static std::pair<int64_t, int64_t> key_of(const Track& t) {                                                     \
      std::initializer_list<int64_t> key = {                                                                        \
          LOUPE_COLUMNS_##tbl(LOUPE_KEY_VALUE, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_IGNORE)};                          \
      return {*key.begin(), key.size() > 1 ? *(key.begin() + 1) : 0};                                               \
    }                                                                                                               \
    static void set_key(Track& t, const CheckedRow& r) {                                                            \
      int c = 0;                                                                                                    \
      LOUPE_COLUMNS_##tbl(LOUPE_SET_KEY, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_IGNORE)                                  \
    }                                                                                                               \
    static void append(Track& t, const CheckedRow& r) {                                                             \
      int c = ntrack;                                                                                               \
      LOUPE_COLUMNS_##tbl(LOUPE_IGNORE, LOUPE_APPEND_SPAN, LOUPE_APPEND_POINT, LOUPE_APPEND_COLUMN)                 \
    }                                                                                                               \
  };
LOUPE_EVENT_TABLES(LOUPE_TABLE_DEF)
#undef LOUPE_TABLE_DEF
#undef LOUPE_APPEND_COLUMN
#undef LOUPE_APPEND_POINT
#undef LOUPE_APPEND_SPAN
#undef LOUPE_SET_KEY
#undef LOUPE_KEY_VALUE
#undef LOUPE_TIME_POINT
#undef LOUPE_TIME_SPAN
#undef LOUPE_COUNT_KEY
#undef LOUPE_NAME_POINT
#undef LOUPE_NAME_SPAN
#undef LOUPE_NAME_FIELD

// The track key's columns, as SQL lists them: "thread", "device, stream".
template <typename Track>
std::string track_cols() {
  std::string cols;
  for (int i = 0; i < TableDef<Track>::ntrack; ++i) {
    cols += fmt::format("{}{}", i == 0 ? "" : ", ", TableDef<Track>::columns[size_t(i)]);
  }
  return cols;
}

// A key in a table's clustered order: (track a, track b, time).
struct Key {
  int64_t a = kMinKey, b = kMinKey, t = kMinKey;
};

// A contiguous key range of one table, read by one worker.
struct Unit {
  int table;  // index into the loader's table list
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
    auto key_expr = [] { return fmt::format("({}, {})", track_cols<Track>(), D::time_col); };
    auto key_params = [](int first) {
      return D::ntrack == 2 ? fmt::format("(?{}, ?{}, ?{})", first, first + 1, first + 2)
                            : fmt::format("(?{}, ?{})", first, first + 1);
    };
    if (u.has_lo) where += fmt::format(" WHERE {} >= {}", key_expr(), key_params(1));
    if (u.has_hi) where += fmt::format("{} {} < {}", u.has_lo ? " AND" : " WHERE", key_expr(), key_params(4));
    Stmt s(db, fmt::format("SELECT {} FROM {}{} ORDER BY {}, {}, id", column_list(), D::table, where,
                           track_cols<Track>(), D::time_col));
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
    // The unit's rows are reserved once, for the first track: a unit of
    // many small tracks (200,000 streams) must not reserve its rows for
    // each of them; the others grow as they are read.
    int64_t unreserved = u.rows_hint;
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
          reserve(*cur, std::exchange(unreserved, 0));
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
      throw StoreError(
          fmt::format("the tracks table lists {} tracks of {}, the table has {}; the file was damaged "
                      "or edited",
                      claims.size(), D::table, out_.size()));
    }
    for (size_t i = 0; i < out_.size(); ++i) {
      const Track& t = out_[i];
      auto [a, b] = key_of(t);
      TrackClaim have{a, b, int64_t(t.size()), first_time(t), last_time(t)};
      const TrackClaim& c = claims[i];
      if (c.a != have.a || c.b != have.b || c.rows != have.rows || c.first != have.first || c.last != have.last) {
        throw StoreError(fmt::format(
            "the tracks table says track {} of {} holds {} rows from {} to {} ns; its rows "
            "say track {}, {} rows from {} to {} ns; the file was damaged or edited",
            key_text(c.a, c.b), D::table, c.rows, c.first, c.last, key_text(a, b), have.rows, have.first, have.last));
      }
    }
  }

 private:
  static std::string column_list() {
    std::string list;
    for (std::string_view c : D::columns) list += fmt::format("{}{}", list.empty() ? "" : ", ", c);
    return list;
  }
  // The track's key columns, as track_cols() names them.
  static std::pair<int64_t, int64_t> key_of(const Track& t) { return D::key_of(t); }
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
    [&]<size_t... I>(std::index_sequence<I...>) { (append_one(std::get<I>(dst), std::get<I>(src)), ...); }
    (std::make_index_sequence<std::tuple_size_v<decltype(dst)>>{});
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
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
}

std::string file_error(const std::string& path, const std::string& what) { return fmt::format("{}: {}", path, what); }

// Whether `options` asks for the event table `table`; refuses a name that
// is no event table.
bool wanted(const ReadOptions& options, const char* table) {
  if (!options.tables) return true;
  return std::find(options.tables->begin(), options.tables->end(), table) != options.tables->end();
}

void check_table_names(const ReadOptions& options) {
  if (!options.tables) return;
  std::span<const std::string_view> known = event_table_names();
  for (const std::string& name : *options.tables) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw std::invalid_argument(fmt::format("no event table '{}'", name));
    }
  }
}

// Reads `units` on `nthreads` connections (this one and nthreads - 1 more),
// each unit into its table's loader; the first error stops the others and
// is thrown as a TraceError naming the table.
void read_units(const std::string& path, sqlite3* db, std::vector<std::unique_ptr<TableLoaderBase>>& loaders,
                const std::vector<Unit>& units, unsigned nthreads) {
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
  extra.reserve(nthreads - 1);
  pool.reserve(nthreads - 1);
  for (unsigned i = 1; i < nthreads; ++i) extra.push_back(store::open_trace(path));
  for (auto& conn : extra) pool.emplace_back(worker, conn.get());
  worker(db);
  for (auto& t : pool) t.join();
  if (!first_error.empty()) throw TraceError(file_error(path, first_error));
}

}  // namespace

TraceModel load_trace(const std::string& path, const ReadOptions& options) {
  check_table_names(options);
  store::Db db = store::open_trace(path);  // throws TraceError
  TraceModel m;
  m.path = path;
  std::map<std::string, std::vector<TrackClaim>> claims;
  try {
    // One read transaction: one snapshot of the file, even while a capture
    // is still writing it.
    store::exec(db.get(), "BEGIN");
    store::read_machine(db.get(), m);
    m.strings = store::read_strings(db.get());
    m.callsites = store::read_callsites(db.get(), m.strings.size());
    claims = store::read_tracks(db.get());

    std::vector<std::unique_ptr<TableLoaderBase>> loaders;
#define LOUPE_LOADER(Row, Track, table, member) loaders.push_back(std::make_unique<TableLoader<Track>>(m.member));
    LOUPE_EVENT_TABLES(LOUPE_LOADER)
#undef LOUPE_LOADER

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
      if (wanted(options, loaders[i]->name()) && store::has_table(db.get(), loaders[i]->name())) {
        loaders[i]->plan(units, int(i), claims[loaders[i]->name()], target, max_rows);
      }
    }
    read_units(path, db.get(), loaders, units, nthreads);
    for (auto& l : loaders) l->finish();
    store::exec(db.get(), "COMMIT");

    store::check_events(m, [&](const char* table) { return wanted(options, table); });
    // The rows are valid; the tracks table must describe exactly them.
    for (auto& l : loaders) {
      if (wanted(options, l->name())) l->verify(claims[l->name()]);
    }
  } catch (const StoreError& e) {
    throw TraceError(file_error(path, e.what()));
  } catch (const std::bad_alloc&) {
    throw TraceError(file_error(path, "out of memory while loading the trace"));
  }

  store::set_extent(m);
  return m;
}

}  // namespace loupe::prof
