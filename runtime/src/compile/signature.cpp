#include "compile/signature.h"

#include <fmt/format.h>

#include <functional>
#include <limits>

namespace loupe::rt::compile {

Signature make_signature(const tree::Flat& flat) {
  Signature s;
  s.structure = flat.structure;
  s.leaves.reserve(flat.leaves.size());
  size_t h = std::hash<size_t>{}(flat.structure.size());
  for (uint64_t x : flat.structure) h = h * 1000003u ^ size_t(x);
  for (const tree::Flat::Leaf& l : flat.leaves) {
    LeafSig ls;
    ls.arg = l.arg;
    ls.is_array = l.is_array;
    if (l.is_array) {
      const Array& a = flat.arrays[size_t(l.index)];
      ls.dtype = a.dtype();
      ls.shape = a.shape();
      ls.device = a.device();
      h = h * 31u ^ size_t(ls.dtype) ^ (size_t(ls.device.index) << 4);
      for (int64_t d : ls.shape) h = h * 1000003u ^ size_t(d);
    } else {
      ls.value = flat.statics[size_t(l.index)];
      h = h * 31u ^ std::hash<std::string>{}(ls.value.str());
    }
    s.leaves.push_back(std::move(ls));
  }
  s.hash = h;
  return s;
}

namespace {

std::string arg_name(int arg, const std::vector<std::string>& names) {
  return size_t(arg) < names.size() && !names[size_t(arg)].empty() ? names[size_t(arg)] : "";
}

std::string array_type(const LeafSig& l) {
  std::string t = type_str(l.dtype, l.shape);
  if (l.device != default_device()) t += " on " + l.device.str();
  return t;
}

std::string leaf_text(const LeafSig& l, const std::vector<std::string>& names) {
  if (l.is_array) return array_type(l);
  std::string n = arg_name(l.arg, names);
  return fmt::format("{}={}", n.empty() ? fmt::format("arg{}", l.arg) : n, l.value.str());
}

// "arg 1 `x`" or "static arg `training`", with the path inside a tree.
std::string describe(const LeafSig& l, const std::string& path, const std::vector<std::string>& names) {
  std::string n = arg_name(l.arg, names) + path;
  if (l.is_array) return n.empty() ? fmt::format("arg {}", l.arg) : fmt::format("arg {} `{}`", l.arg, n);
  return n.empty() ? fmt::format("static arg {}", l.arg) : fmt::format("static arg `{}`", n);
}

bool same_shape_of_tree(const Signature& a, const Signature& b) {
  if (a.structure != b.structure || a.leaves.size() != b.leaves.size()) return false;
  for (size_t i = 0; i < a.leaves.size(); ++i)
    if (a.leaves[i].is_array != b.leaves[i].is_array || a.leaves[i].arg != b.leaves[i].arg) return false;
  return true;
}

}  // namespace

std::string Signature::text(const std::vector<std::string>& arg_names) const {
  std::string out;
  for (size_t i = 0; i < leaves.size(); ++i) out += (i ? ", " : "") + leaf_text(leaves[i], arg_names);
  return out;
}

std::string explain_miss(const Signature& now, const std::vector<const Signature*>& before, const tree::Flat& paths,
                         const std::vector<std::string>& arg_names) {
  if (before.empty()) return "";
  auto path = [&](size_t leaf) { return leaf < paths.paths.size() ? paths.paths[leaf] : std::string(); };
  // The closest earlier signature with the same tree: fewest differing leaves.
  const Signature* best = nullptr;
  size_t best_diff = std::numeric_limits<size_t>::max();
  for (auto it = before.rbegin(); it != before.rend(); ++it) {
    if (!same_shape_of_tree(now, **it)) continue;
    size_t diff = 0;
    for (size_t i = 0; i < now.leaves.size(); ++i) diff += !(now.leaves[i] == (*it)->leaves[i]);
    if (diff < best_diff) {
      best_diff = diff;
      best = *it;
    }
  }
  if (best == nullptr) {
    // The trees differ: say which argument changed its number of leaves.
    const Signature& last = *before.back();
    int args = 0;
    for (const LeafSig& l : now.leaves) args = std::max(args, l.arg + 1);
    for (const LeafSig& l : last.leaves) args = std::max(args, l.arg + 1);
    for (int a = 0; a < args; ++a) {
      size_t n_now = 0, n_before = 0;
      for (const LeafSig& l : now.leaves) n_now += l.arg == a;
      for (const LeafSig& l : last.leaves) n_before += l.arg == a;
      if (n_now != n_before) {
        std::string n = arg_name(a, arg_names);
        return fmt::format("arg {}{}: now {} leaves, before {}", a, n.empty() ? "" : " `" + n + "`", n_now, n_before);
      }
    }
    return "the arguments' tree structure changed";
  }
  std::vector<std::string> diffs;
  for (size_t i = 0; i < now.leaves.size(); ++i) {
    const LeafSig &a = now.leaves[i], &b = best->leaves[i];
    if (a == b) continue;
    if (a.is_array)
      diffs.push_back(
          fmt::format("{}: now {}, before {}", describe(a, path(i), arg_names), array_type(a), array_type(b)));
    else
      diffs.push_back(
          fmt::format("{}: now {}, before {}", describe(a, path(i), arg_names), a.value.str(), b.value.str()));
  }
  std::string out;
  for (size_t i = 0; i < diffs.size() && i < 3; ++i) out += (i ? "; " : "") + diffs[i];
  if (diffs.size() > 3) out += fmt::format(" (and {} more)", diffs.size() - 3);
  return out;
}

}  // namespace loupe::rt::compile
