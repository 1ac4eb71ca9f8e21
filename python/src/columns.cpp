#include "columns.h"

#include <fmt/format.h>
#include <nanobind/ndarray.h>

#include <stdexcept>
#include <type_traits>
#include <utility>

#include "loupe/prof/trace_tables.h"

namespace loupe::python {

namespace nb = nanobind;
using namespace loupe::prof;

namespace {

// How a model value is stored in an array: an enumerator as its integer.
template <typename T>
using Stored = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>, std::type_identity<T>>::type;

template <typename Track>
size_t event_count(const std::vector<Track>& tracks) {
  size_t n = 0;
  for (const Track& t : tracks) n += t.size();
  return n;
}

// The events' values of one column, track after track.
template <typename Track, typename T>
std::vector<Stored<T>> gather(const std::vector<Track>& tracks, std::vector<T> Track::*column) {
  std::vector<Stored<T>> out;
  out.reserve(event_count(tracks));
  for (const Track& t : tracks) {
    for (const T& v : t.*column) out.push_back(Stored<T>(v));
  }
  return out;
}

// A track key, once for each event of its track.
template <typename Track, typename T>
std::vector<Stored<T>> repeat_key(const std::vector<Track>& tracks, T Track::*key) {
  std::vector<Stored<T>> out;
  out.reserve(event_count(tracks));
  for (const Track& t : tracks) out.insert(out.end(), t.size(), Stored<T>(t.*key));
  return out;
}

// A NumPy array that owns `values` (no copy): freed when Python drops it.
template <typename T>
nb::object numpy_array(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  size_t shape[1] = {owned->size()};
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), 1, shape, owner));
}

template <typename Enum>
nb::object enumerator_names() {
  nb::list names;
  for (size_t i = 0; i < enumerator_count<Enum>(); ++i)
    names.append(nb::str(name_of(Enum(i)).data(), name_of(Enum(i)).size()));
  return names;
}

template <typename T, typename V>
Column make_column(const char* name, const char* check, std::vector<V>&& values) {
  Column c{name, check, nb::none(), nb::none()};
  if constexpr (std::is_same_v<V, std::string>) {
    nb::list texts;
    for (const std::string& s : values) texts.append(nb::str(s.data(), s.size()));
    c.values = texts;
  } else {
    c.values = numpy_array(std::move(values));
  }
  if constexpr (std::is_enum_v<T>) c.categories = enumerator_names<T>();
  return c;
}

}  // namespace

std::vector<Column> table_columns(const TraceModel& model, const std::string& table) {
  std::vector<Column> out;
#define LOUPE_PY_KEY(name, type, check, init) \
  out.push_back(make_column<type>(#name, #check, repeat_key(tracks, &TrackType::name)));
#define LOUPE_PY_SPAN(start, dur)                                                            \
  out.push_back(make_column<int64_t>(#start, "integer", gather(tracks, &TrackType::start))); \
  out.push_back(make_column<int64_t>(#dur, "count", gather(tracks, &TrackType::dur)));
#define LOUPE_PY_POINT(time) out.push_back(make_column<int64_t>(#time, "integer", gather(tracks, &TrackType::time)));
#define LOUPE_PY_COLUMN(name, type, check, init) \
  out.push_back(make_column<type>(#name, #check, gather(tracks, &TrackType::name)));
#define LOUPE_PY_TABLE(Row, Track, table_name, member)                                                   \
  if (table == #table_name) {                                                                            \
    using TrackType = Track;                                                                             \
    const std::vector<Track>& tracks = model.member;                                                     \
    LOUPE_COLUMNS_##table_name(LOUPE_PY_KEY, LOUPE_PY_SPAN, LOUPE_PY_POINT, LOUPE_PY_COLUMN) return out; \
  }
  LOUPE_EVENT_TABLES(LOUPE_PY_TABLE)
#undef LOUPE_PY_TABLE
#undef LOUPE_PY_COLUMN
#undef LOUPE_PY_POINT
#undef LOUPE_PY_SPAN
#undef LOUPE_PY_KEY
  std::string known;
  for (std::string_view t : event_table_names()) known += fmt::format("{}{}", known.empty() ? "" : ", ", t);
  throw std::invalid_argument(fmt::format("no event table '{}' (tables: {})", table, known));
}

}  // namespace loupe::python
