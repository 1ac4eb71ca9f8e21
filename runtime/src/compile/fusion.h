// Fusion: which nodes of an optimised graph run together as one kernel.
//
// Walking the graph in order, each elementwise node joins the group
// (future kernel) of one of its operands when it has the same shape and
// joining creates no cycle between groups; a reduction joins the group of
// its operand. Groups then merge with the groups they read from, and with
// sibling groups reading the same buffer, whenever no cycle and no view
// read forbids it: a chain like AdamW's update becomes one pass over
// memory. Matmuls, gathers, concatenations... are groups of their own.
// Views (transpose, broadcast_to, slice) join nothing: they become strided
// loads of their source in every group that reads them; reshapes alias
// their operand's buffer; constants (full) become immediates.
#pragma once

#include <set>
#include <vector>

#include "ir/graph.h"

namespace loupe::rt::compile {

inline bool is_alias(ir::Op op) { return op == ir::Op::reshape || op == ir::Op::stop_gradient; }
inline bool is_strided_view(ir::Op op) {
  return op == ir::Op::transpose || op == ir::Op::broadcast_to || op == ir::Op::slice;
}

struct Group {
  // loop: fused elementwise nodes (and a reduction); opaque: one matmul,
  // gather...; copy and fill: a view or a constant that needs a buffer.
  enum class Kind : uint8_t { loop, opaque, copy, fill };
  Kind kind = Kind::loop;
  Shape iter;                       // the iteration space
  std::vector<ir::NodeId> members;  // in graph order
  ir::NodeId reduce = -1;
  std::vector<int> inputs;  // groups it reads from (while forming them)
  // Groups whose values it reads other than as same-shape registers
  // (through views, a reduction's result, a random key): never merged.
  std::vector<int> view_reads;
  bool alive = true;
  std::set<int> deps;  // groups it reads from (exact, for scheduling)
};

struct Grouping {
  std::vector<Group> groups;
  std::vector<int> group_of;  // per node; -1 for parameters, captured constants, full, views and aliases
};

// Groups the graph's nodes into kernels; with `fuse` off, every node that
// computes is a kernel of its own.
Grouping group_nodes(const ir::Graph& g, bool fuse);

}  // namespace loupe::rt::compile
