// Argument trees: how jit and grad see the arguments of a C++ function.
//
// A function's arguments and results are trees whose leaves are Arrays
// (traced) or static values (bool, integers, floating point, strings:
// part of a jitted function's signature, passed through unchanged).
// Containers are std::vector, std::array, std::pair, std::tuple,
// std::map<std::string, T>, and any struct with a member
//
//   auto tree_fields() { return std::tie(w, b); }
//
// listing its fields (default-constructible and copyable).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "loupe/rt/array.h"

namespace loupe::rt {

// A static (non-array) leaf.
struct StaticValue {
  std::variant<bool, int64_t, double, std::string> value;
  bool operator==(const StaticValue&) const = default;
  // "true", "3", "0.5", "\"adam\"".
  std::string str() const;
};

namespace tree {

// Collects the leaves of a tree in order. `structure` captures container
// sizes and keys, so that two trees with the same leaves in a different
// shape differ; `paths` (only when asked) names each leaf: "[2]", ".w".
struct Flat {
  std::vector<Array> arrays;
  std::vector<StaticValue> statics;
  std::vector<uint64_t> structure;
  // Per leaf in order: the top-level argument, and whether it is an array.
  struct Leaf {
    int arg;
    bool is_array;
    int index;  // into arrays or statics
  };
  std::vector<Leaf> leaves;
  int arg = 0;
  bool want_paths = false;
  std::vector<std::string> paths;  // per leaf, when want_paths
  std::string prefix;              // the path being built

  void add(const Array& a) {
    leaves.push_back({arg, true, int(arrays.size())});
    arrays.push_back(a);
    if (want_paths) paths.push_back(prefix);
  }
  void add(StaticValue v) {
    leaves.push_back({arg, false, int(statics.size())});
    statics.push_back(std::move(v));
    if (want_paths) paths.push_back(prefix);
  }
};

template <typename T, typename = void>
struct Traits;

template <typename T>
void flatten(const T& x, Flat& f) {
  Traits<T>::flatten(x, f);
}

// Rebuilds a tree like `tmpl` with its array leaves taken in order from
// `arrays` starting at `next`.
template <typename T>
T rebuild(const T& tmpl, const std::vector<Array>& arrays, size_t& next) {
  return Traits<T>::rebuild(tmpl, arrays, next);
}

// A path component appended while flattening children.
struct PathScope {
  PathScope(Flat& flat, const std::string& part) : f(flat), size(flat.prefix.size()) {
    if (flat.want_paths) flat.prefix += part;
  }
  ~PathScope() { f.prefix.resize(size); }
  Flat& f;
  size_t size;
};

template <>
struct Traits<Array> {
  static void flatten(const Array& x, Flat& f) { f.add(x); }
  static Array rebuild(const Array&, const std::vector<Array>& arrays, size_t& next) { return arrays.at(next++); }
};

template <typename T>
struct Traits<T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>>> {
  static void flatten(const T& x, Flat& f) {
    if constexpr (std::is_same_v<T, bool>) {
      f.add(StaticValue{x});
    } else if constexpr (std::is_floating_point_v<T>) {
      f.add(StaticValue{double(x)});
    } else {
      f.add(StaticValue{int64_t(x)});
    }
  }
  static T rebuild(const T& x, const std::vector<Array>&, size_t&) { return x; }
};

template <>
struct Traits<std::string> {
  static void flatten(const std::string& x, Flat& f) { f.add(StaticValue{x}); }
  static std::string rebuild(const std::string& x, const std::vector<Array>&, size_t&) { return x; }
};

template <typename T>
struct Traits<std::vector<T>> {
  static void flatten(const std::vector<T>& x, Flat& f) {
    f.structure.push_back(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      PathScope p(f, f.want_paths ? "[" + std::to_string(i) + "]" : std::string());
      tree::flatten(x[i], f);
    }
  }
  static std::vector<T> rebuild(const std::vector<T>& x, const std::vector<Array>& arrays, size_t& next) {
    std::vector<T> out;
    out.reserve(x.size());
    for (const T& e : x) out.push_back(tree::rebuild(e, arrays, next));
    return out;
  }
};

template <typename T, size_t N>
struct Traits<std::array<T, N>> {
  static void flatten(const std::array<T, N>& x, Flat& f) {
    for (size_t i = 0; i < N; ++i) {
      PathScope p(f, f.want_paths ? "[" + std::to_string(i) + "]" : std::string());
      tree::flatten(x[i], f);
    }
  }
  static std::array<T, N> rebuild(const std::array<T, N>& x, const std::vector<Array>& arrays, size_t& next) {
    std::array<T, N> out = x;
    for (size_t i = 0; i < N; ++i) out[i] = tree::rebuild(x[i], arrays, next);
    return out;
  }
};

template <typename T>
struct Traits<std::map<std::string, T>> {
  static void flatten(const std::map<std::string, T>& x, Flat& f) {
    f.structure.push_back(x.size());
    for (const auto& [k, v] : x) {
      f.structure.push_back(std::hash<std::string>{}(k));
      PathScope p(f, f.want_paths ? "[\"" + k + "\"]" : std::string());
      tree::flatten(v, f);
    }
  }
  static std::map<std::string, T> rebuild(const std::map<std::string, T>& x, const std::vector<Array>& arrays,
                                          size_t& next) {
    std::map<std::string, T> out;
    for (const auto& [k, v] : x) out.emplace(k, tree::rebuild(v, arrays, next));
    return out;
  }
};

template <typename... Ts>
struct Traits<std::tuple<Ts...>> {
  template <size_t... I>
  static void flatten_each(const std::tuple<Ts...>& x, Flat& f, std::index_sequence<I...>) {
    auto one = [&](const auto& e, size_t i) {
      PathScope p(f, f.want_paths ? "[" + std::to_string(i) + "]" : std::string());
      tree::flatten(e, f);
    };
    (one(std::get<I>(x), I), ...);
  }
  static void flatten(const std::tuple<Ts...>& x, Flat& f) { flatten_each(x, f, std::index_sequence_for<Ts...>{}); }
  template <size_t... I>
  static std::tuple<Ts...> rebuild_each(const std::tuple<Ts...>& x, const std::vector<Array>& arrays, size_t& next,
                                        std::index_sequence<I...>) {
    // Braced initialisation evaluates in order, so leaves are taken in order.
    return std::tuple<Ts...>{tree::rebuild(std::get<I>(x), arrays, next)...};
  }
  static std::tuple<Ts...> rebuild(const std::tuple<Ts...>& x, const std::vector<Array>& arrays, size_t& next) {
    return rebuild_each(x, arrays, next, std::index_sequence_for<Ts...>{});
  }
};

template <typename A, typename B>
struct Traits<std::pair<A, B>> {
  static void flatten(const std::pair<A, B>& x, Flat& f) {
    {
      PathScope p(f, ".first");
      tree::flatten(x.first, f);
    }
    PathScope p(f, ".second");
    tree::flatten(x.second, f);
  }
  static std::pair<A, B> rebuild(const std::pair<A, B>& x, const std::vector<Array>& arrays, size_t& next) {
    return std::pair<A, B>{tree::rebuild(x.first, arrays, next), tree::rebuild(x.second, arrays, next)};
  }
};

// Structs that list their fields with tree_fields().
template <typename T>
struct Traits<T, std::void_t<decltype(std::declval<T&>().tree_fields())>> {
  static void flatten(const T& x, Flat& f) {
    auto fields = const_cast<T&>(x).tree_fields();
    std::apply([&](auto&... e) { (tree::flatten(std::as_const(e), f), ...); }, fields);
  }
  static T rebuild(const T& x, const std::vector<Array>& arrays, size_t& next) {
    T out = x;
    auto src = const_cast<T&>(x).tree_fields();
    auto dst = out.tree_fields();
    rebuild_fields(src, dst, arrays, next, std::make_index_sequence<std::tuple_size_v<decltype(src)>>{});
    return out;
  }
  template <typename S, typename D, size_t... I>
  static void rebuild_fields(S& src, D& dst, const std::vector<Array>& arrays, size_t& next,
                             std::index_sequence<I...>) {
    ((std::get<I>(dst) = tree::rebuild(std::get<I>(src), arrays, next)), ...);
  }
};

}  // namespace tree
}  // namespace loupe::rt
