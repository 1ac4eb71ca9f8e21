#include "ir/graph.h"

#include <fmt/format.h>

#include <cstring>
#include <functional>

namespace loupe::rt::ir {

namespace {
void mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }
void mix_vec(size_t& h, const std::vector<int64_t>& v) {
  mix(h, v.size());
  for (int64_t x : v) mix(h, size_t(x));
}
}  // namespace

size_t hash_attrs(const Attrs& a) {
  size_t h = 0;
  mix_vec(h, a.shape);
  mix(h, size_t(a.dtype));
  mix_vec(h, a.axes);
  mix_vec(h, a.starts);
  mix_vec(h, a.stops);
  mix_vec(h, a.steps);
  mix(h, std::hash<double>{}(a.value));
  mix(h, size_t(a.axis));
  mix(h, size_t(a.keepdims) | size_t(a.causal) << 1 | size_t(a.transpose_a) << 2 | size_t(a.transpose_b) << 3);
  return h;
}

std::string format_loc(const std::source_location& loc) {
  const char* file = loc.file_name();
  if (file == nullptr || *file == 0) return "?";
  const char* slash = std::strrchr(file, '/');
  return fmt::format("{}:{}", slash ? slash + 1 : file, loc.line());
}

namespace {

std::string ints(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }

std::string attrs_text(const Node& n) {
  const Attrs& a = n.attrs;
  switch (n.op) {
    LOUPE_SOURCE_OPS(LOUPE_OP_CASE)
    LOUPE_UNARY_OPS(LOUPE_OP_CASE)
    LOUPE_ARITHMETIC_OPS(LOUPE_OP_CASE)
    LOUPE_COMPARISON_OPS(LOUPE_OP_CASE)
    LOUPE_LOGICAL_OPS(LOUPE_OP_CASE)
    case Op::random_bits:
    case Op::random_uniform:
    case Op::random_normal:
    case Op::where:
    case Op::reshape:
    case Op::broadcast_to:
    case Op::gather:
    case Op::scatter_add: return "";
    case Op::full: return fmt::format("value={}", a.value);
    case Op::iota: return fmt::format("axis={}", a.axis);
    case Op::reduce_sum:
    case Op::reduce_max:
    case Op::reduce_min:
    case Op::argmax: return fmt::format("axes={}{}", ints(a.axes), a.keepdims ? " keepdims" : "");
    case Op::transpose: return fmt::format("perm={}", ints(a.axes));
    case Op::slice: return fmt::format("starts={} stops={} steps={}", ints(a.starts), ints(a.stops), ints(a.steps));
    case Op::pad: return fmt::format("starts={} steps={}", ints(a.starts), ints(a.steps));
    case Op::concat: return fmt::format("axis={}", a.axis);
    case Op::matmul:
      if (a.transpose_a || a.transpose_b)
        return fmt::format("{}{}", a.transpose_a ? "transpose_a " : "", a.transpose_b ? "transpose_b" : "");
      return "";
    case Op::attention:
    case Op::attention_bwd: return fmt::format("scale={:.4g}{}", a.value, a.causal ? " causal" : "");
  }
  return "";  // not an Op
}

}  // namespace

std::string print_node(const Graph& g, NodeId id) {
  const Node& n = g[id];
  std::string args;
  if (n.op == Op::parameter) {
    args = fmt::format("{}", n.param);
  } else {
    for (size_t i = 0; i < n.inputs.size(); ++i) args += fmt::format("{}%{}", i ? ", " : "", n.inputs[i]);
  }
  std::string attrs = attrs_text(n);
  if (!attrs.empty()) args += (args.empty() ? "" : ", ") + attrs;
  return fmt::format("%{} = {}({}) : {}  # {}", id, op_name(n.op), args, type_str(n.dtype, n.shape), format_loc(n.loc));
}

std::string print_graph(const Graph& g, const std::string& name) {
  std::string out = fmt::format("func {}(", name);
  for (size_t i = 0; i < g.params.size(); ++i) {
    const Node& p = g[g.params[i]];
    out += fmt::format("{}%{}: {}", i ? ", " : "", g.params[i], type_str(p.dtype, p.shape));
  }
  out += ") {\n";
  for (NodeId i = 0; i < NodeId(g.size()); ++i) {
    if (g[i].op == Op::parameter) continue;
    out += "  " + print_node(g, i) + "\n";
  }
  out += "  return ";
  for (size_t i = 0; i < g.outputs.size(); ++i) out += fmt::format("{}%{}", i ? ", " : "", g.outputs[i]);
  out += "\n}\n";
  return out;
}

}  // namespace loupe::rt::ir
