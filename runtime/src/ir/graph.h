// The IR: a graph of primitive nodes in topological order (a node's inputs
// always come before it), as a trace builds it and the passes rewrite it.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "ir/op.h"
#include "loupe/rt/array.h"

namespace loupe::rt::ir {

using NodeId = int32_t;

// Per-op parameters. A plain struct rather than one type per op: passes
// compare and hash them as a whole, and each op reads the fields it owns.
struct Attrs {
  Shape shape;                  // full, iota, random_*, reshape, broadcast_to, pad, scatter_add: the result's shape
  Dtype dtype = Dtype::f32;     // full, iota, cast: the result's dtype
  std::vector<int64_t> axes;    // reductions: reduced axes, sorted; transpose: the permutation
  std::vector<int64_t> starts;  // slice, pad
  std::vector<int64_t> stops;   // slice
  std::vector<int64_t> steps;   // slice, pad
  double value = 0;             // full: the value; attention: the scale
  int64_t axis = 0;             // iota, concat
  bool keepdims = false;        // reductions
  bool causal = false;          // attention
  bool transpose_a = false, transpose_b = false;  // matmul: operands used transposed (last two axes)

  bool operator==(const Attrs&) const = default;
};
size_t hash_attrs(const Attrs& a);

struct Node {
  Op op = Op::parameter;
  Dtype dtype = Dtype::f32;
  Shape shape;
  std::vector<NodeId> inputs;
  Attrs attrs;
  // The user's line that created it: carried through passes and lowering so
  // that errors and allocations name it.
  std::source_location loc;
  Array constant;  // Op::constant: the captured value
  int param = -1;  // Op::parameter: the position among the inputs
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<NodeId> params;   // in parameter order
  std::vector<NodeId> outputs;  // may repeat or name parameters

  NodeId add(Node node) {
    nodes.push_back(std::move(node));
    return NodeId(nodes.size() - 1);
  }
  const Node& operator[](NodeId id) const { return nodes[size_t(id)]; }
  Node& operator[](NodeId id) { return nodes[size_t(id)]; }
  size_t size() const { return nodes.size(); }
};

// "%3 = add(%1, %2) : f32[256,1024]  # mlp.cpp:42" per node, for debugging
// and for the compile event's IR text.
std::string print_node(const Graph& g, NodeId id);
std::string print_graph(const Graph& g, const std::string& name);

// "mlp.cpp:42": a location as messages show it.
std::string format_loc(const std::source_location& loc);

}  // namespace loupe::rt::ir
