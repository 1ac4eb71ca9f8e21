#include "store/model_checks.h"

#include <fmt/format.h>

#include <span>
#include <vector>

#include "loupe/prof/trace_tables.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof::store {

namespace {

using Check = ColumnCheck;

// What a table's rows refer to: string ids the strings table holds, call
// sites the callsites table holds (trace_tables.h's string and callsite
// checks).
class References {
 public:
  References(const char* table, const TraceModel& m) : table_(table), m_(m) {}

  template <Check C, typename T>
  void require(const char* column, const T& values) const {
    if constexpr (C == Check::string) {
      for (StringId id : as_range(values)) {
        if (id >= m_.strings.size()) {
          bad(fmt::format("{} refers to string id {}, which the strings table lacks", column, id));
        }
      }
    } else if constexpr (C == Check::callsite) {
      for (uint32_t id : as_range(values)) {
        if (id != 0 && m_.callsite(id) == nullptr) bad(fmt::format("callsite {} is not in the callsites table", id));
      }
    }
  }

  [[noreturn]] void bad(const std::string& what) const { throw StoreError(fmt::format("{}: {}", table_, what)); }

 private:
  // A key is one value; a column, many.
  template <typename T>
  static std::span<const T> as_range(const std::vector<T>& v) {
    return v;
  }
  template <typename T>
  static std::span<const T> as_range(const T& v) {
    return {&v, 1};
  }

  const char* table_;
  const TraceModel& m_;
};

#define LOUPE_CHECK_REF(name, type, check, init) refs.require<Check::check>(#name, t.name);
#define LOUPE_CHECK_REFS(Row, Track, table, member)                                     \
  [[maybe_unused]] void check_references(const References& refs, const Track& t) {      \
    LOUPE_COLUMNS_##table(LOUPE_CHECK_REF, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_CHECK_REF) \
  }
LOUPE_EVENT_TABLES(LOUPE_CHECK_REFS)
#undef LOUPE_CHECK_REFS
#undef LOUPE_CHECK_REF

template <typename Track>
void validate_track(const char* table, const TraceModel& m, const Track& t) {
  References refs(table, m);
  // Times within +-2^62 ns (trace_format.h), so that analyses can take
  // any difference of two times without overflow.
  if constexpr (requires { t.dur; }) {
    for (size_t i = 0; i < t.size(); ++i) {
      int64_t start = t.start[i], dur = t.dur[i];
      if (dur < 0) refs.bad(fmt::format("negative duration {} ns", dur));
      if (!is_trace_time(start) || dur >= kMaxTraceTimeNs - start) {
        refs.bad(fmt::format("start + dur ({} + {} ns) lies outside the +-2^62 ns a trace can hold", start, dur));
      }
    }
  } else {
    for (int64_t time : t.time) {
      if (!is_trace_time(time)) refs.bad(fmt::format("time {} ns lies outside the +-2^62 ns a trace can hold", time));
    }
  }
  check_references(refs, t);
}

// The sums of a table's durations, byte counts and phase times (its count
// columns) stay under kMaxTableTotal (trace_format.h), so that analyses can
// total them.
template <typename Track>
void check_totals(const char* table, const std::vector<Track>& tracks) {
  for_each_totalled_column<Track>([&](const char* column, auto member) {
    int64_t total = 0;
    for (const Track& t : tracks) {
      for (int64_t v : t.*member) {
        if (!add_to_table_total(total, v)) {
          throw StoreError(
              fmt::format("{}: the values of '{}' add up to 2^60 or more (36 years of nanoseconds, "
                          "an exbibyte); the file was damaged or edited",
                          table, column));
        }
      }
    }
  });
}

template <typename Track>
void validate_table(const char* table, const TraceModel& m, const std::vector<Track>& tracks) {
  for (const Track& t : tracks) validate_track(table, m, t);
  check_totals(table, tracks);
}

}  // namespace

void check_events(const TraceModel& m, const std::function<bool(const char* table)>& wanted) {
#define LOUPE_VALIDATE(Row, Track, table, member) \
  if (wanted(#table)) validate_table(#table, m, m.member);
  LOUPE_EVENT_TABLES(LOUPE_VALIDATE)
#undef LOUPE_VALIDATE
}

// The extent of the trace: the earliest start and the latest end of any
// event read (0, 0 when there is none).
void set_extent(TraceModel& m) {
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
  auto extend_table = [&](const auto& tracks_of) {
    for (const auto& t : tracks_of) {
      if (t.size() == 0) continue;
      if constexpr (requires { t.dur; }) {
        int64_t last = 0;
        for (size_t i = 0; i < t.size(); ++i) last = std::max(last, t.end(i));
        extend(t.start.front(), last);
      } else {
        extend(t.time.front(), t.time.back());
      }
    }
  };
#define LOUPE_EXTEND(Row, Track, table, member) extend_table(m.member);
  LOUPE_EVENT_TABLES(LOUPE_EXTEND)
#undef LOUPE_EXTEND
}

}  // namespace loupe::prof::store
