// Lowering: from an optimised graph to an executable.
//
// 1. Grouping. Walking the graph in order, each elementwise node joins the
//    group (future kernel) of one of its operands when it has the same
//    shape and joining creates no cycle between groups; a reduction joins
//    the group of its operand as the group's last act. Matmuls, gathers,
//    concatenations... are groups of their own. Views (transpose,
//    broadcast_to, slice) join nothing: they become strided loads of their
//    source in every group that reads them; reshapes alias their operand's
//    buffer; constants (full) become immediates.
// 2. Materialisation. A value gets a buffer when something outside its
//    group reads it, when it is an output, or when a kernel that is not a
//    fused loop needs it as an operand (a view then gets a copy kernel, a
//    constant a fill kernel).
// 3. Scheduling groups in dependency order, building each kernel's spec,
//    and planning when each temporary buffer can be released.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "compile/executable.h"
#include "exec/callsite_cache.h"
#include "exec/nvtx.h"
#include "ir/graph.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::compile {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::Op;
using namespace exec;

namespace {

bool is_alias(Op op) { return op == Op::reshape || op == Op::stop_gradient; }
bool is_strided_view(Op op) { return op == Op::transpose || op == Op::broadcast_to || op == Op::slice; }
RegClass class_of(Dtype d) { return is_floating(d) ? RegClass::f : RegClass::i; }

struct Group {
  enum class Kind : uint8_t { loop, opaque, copy, fill };
  Kind kind = Kind::loop;
  Shape iter;
  std::vector<NodeId> members;  // in graph order
  NodeId reduce = -1;
  std::vector<int> inputs;  // groups it reads from (formation-time, transitive check)
  // Groups whose values it reads other than as same-shape registers
  // (through views, a reduction's result, a random key): never merged.
  std::vector<int> view_reads;
  bool alive = true;
  std::set<int> deps;       // groups it reads from (exact, for scheduling)
};

// Where a loaded value comes from: an immediate, or a slot through a view.
struct Source {
  bool is_const = false;
  double value = 0;
  int slot = -1;
  View view;
};

class Lowering {
 public:
  Lowering(const Graph& g, bool fuse) : g_(g), fuse_(fuse), group_(g.size(), -1), slot_(g.size(), -1) {}

  std::shared_ptr<Executable> run();

 private:
  // ---- grouping
  NodeId root(NodeId x) const {
    while (is_alias(g_[x].op) || is_strided_view(g_[x].op)) x = g_[x].inputs[0];
    return x;
  }
  bool reaches(int from, int target);
  bool can_join(NodeId n, int gid);
  void add_to(NodeId n, int gid);
  int find(int gid) {
    while (parent_[size_t(gid)] != gid) gid = parent_[size_t(gid)] = parent_[size_t(parent_[size_t(gid)])];
    return gid;
  }
  bool can_merge(int a, int b);
  void merge(int into, int from);
  void merge_groups();
  int new_group(Group::Kind kind, Shape iter);
  void form_groups();

  // ---- materialisation
  int buffer_of(NodeId x, int reader);
  Source resolve(NodeId x, int reader);
  int temp_slot(NodeId x);
  void materialise();

  // ---- specs
  std::shared_ptr<KernelSpec> build_loop(int gid, std::vector<int>& in_slots, std::vector<int>& out_slots);
  std::shared_ptr<KernelSpec> build_opaque(int gid, std::vector<int>& in_slots, std::vector<int>& out_slots);
  std::vector<int> schedule();
  std::string kernel_name(int gid) const;

  const Graph& g_;
  bool fuse_;
  std::vector<int> group_;
  std::vector<int> slot_;
  std::vector<Group> groups_;
  std::vector<int> producer_;  // per slot: the group writing it, -1 if none
  std::vector<bool> stored_;   // per node: a member whose value its group stores
  std::vector<int> copy_group_;  // per node: the copy/fill group materialising a view or constant
  std::vector<int> visit_mark_;
  std::vector<int> parent_;  // union-find over groups while forming them
  int visit_epoch_ = 0;
  Executable exe_;

 public:
  int64_t fusion_ns_ = 0;
};

int Lowering::new_group(Group::Kind kind, Shape iter) {
  Group gr;
  gr.kind = kind;
  gr.iter = std::move(iter);
  groups_.push_back(std::move(gr));
  visit_mark_.push_back(0);
  parent_.push_back(int(groups_.size() - 1));
  return int(groups_.size() - 1);
}

bool Lowering::reaches(int from, int target) {
  // Does group `from` (transitively) read from group `target`?
  ++visit_epoch_;
  std::vector<int> stack{from};
  while (!stack.empty()) {
    int gid = find(stack.back());
    stack.pop_back();
    if (gid == target) return true;
    if (visit_mark_[size_t(gid)] == visit_epoch_) continue;
    visit_mark_[size_t(gid)] = visit_epoch_;
    for (int in : groups_[size_t(gid)].inputs) stack.push_back(in);
  }
  return false;
}

bool Lowering::can_join(NodeId n, int gid) {
  for (NodeId x : g_[n].inputs) {
    if (group_[size_t(x)] >= 0 && find(group_[size_t(x)]) == gid) {
      // A key is loaded from a buffer; a reduction's result exists only
      // once its loop is done.
      if (ir::is_random(g_[n].op) || ir::is_reduction(g_[x].op)) return false;
      continue;
    }
    NodeId r = root(x);
    if (g_[r].op == Op::full) continue;
    int h = group_[size_t(r)] >= 0 ? find(group_[size_t(r)]) : -1;
    if (h < 0) continue;
    if (h == gid) return false;  // a view of this group's own value
    if (reaches(h, gid)) return false;
  }
  return true;
}

void Lowering::add_to(NodeId n, int gid) {
  Group& gr = groups_[size_t(gid)];
  gr.members.push_back(n);
  group_[size_t(n)] = gid;
  for (NodeId x : g_[n].inputs) {
    NodeId r = root(x);
    int h = group_[size_t(r)] >= 0 ? find(group_[size_t(r)]) : -1;
    if (h < 0 || h == gid) continue;
    if (std::find(gr.inputs.begin(), gr.inputs.end(), h) == gr.inputs.end()) gr.inputs.push_back(h);
    bool as_register = r == x && !ir::is_reduction(g_[x].op) && !ir::is_random(g_[n].op) &&
                       g_[x].shape == gr.iter && g_[n].op != Op::argmax;
    if (!as_register && std::find(gr.view_reads.begin(), gr.view_reads.end(), h) == gr.view_reads.end())
      gr.view_reads.push_back(h);
  }
}

bool Lowering::can_merge(int a, int b) {
  const Group &ga = groups_[size_t(a)], &gb = groups_[size_t(b)];
  if (ga.kind != Group::Kind::loop || gb.kind != Group::Kind::loop || ga.iter != gb.iter) return false;
  if (ga.reduce >= 0 && gb.reduce >= 0) return false;
  for (int v : ga.view_reads)
    if (find(v) == b) return false;
  for (int v : gb.view_reads)
    if (find(v) == a) return false;
  // No path between them through a third group.
  for (int in : ga.inputs) {
    int i = find(in);
    if (i != b && i != a && reaches(i, b)) return false;
  }
  for (int in : gb.inputs) {
    int i = find(in);
    if (i != a && i != b && reaches(i, a)) return false;
  }
  return true;
}

void Lowering::merge(int into, int from) {
  Group& a = groups_[size_t(into)];
  Group& b = groups_[size_t(from)];
  parent_[size_t(from)] = into;
  a.members.insert(a.members.end(), b.members.begin(), b.members.end());
  std::sort(a.members.begin(), a.members.end());
  if (b.reduce >= 0) a.reduce = b.reduce;
  for (int in : b.inputs) a.inputs.push_back(in);
  for (int v : b.view_reads) a.view_reads.push_back(v);
  auto canon = [&](std::vector<int>& v) {
    for (int& x : v) x = find(x);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    std::erase(v, into);
  };
  canon(a.inputs);
  canon(a.view_reads);
  b.alive = false;
  b.members.clear();
  b.inputs.clear();
  b.view_reads.clear();
}

// After greedy grouping: merge each loop with the loops it reads from, then
// loops that read the same buffer, whenever no cycle and no view read
// forbids it, so that a chain like AdamW's update is one pass over memory.
void Lowering::merge_groups() {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].alive) continue;
      std::vector<int> ins = groups_[g].inputs;
      for (int in : ins) {
        int h = find(in);
        int self = find(int(g));
        if (h == self || !groups_[size_t(h)].alive) continue;
        if (can_merge(self, h)) {
          merge(self, h);
          changed = true;
        }
      }
    }
  }
  // Siblings: loops of the same space reading a common buffer.
  std::map<NodeId, std::vector<int>> readers;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!groups_[g].alive || groups_[g].kind != Group::Kind::loop) continue;
    for (NodeId m : groups_[g].members)
      for (NodeId x : g_[m].inputs) {
        NodeId r = root(x);
        if (g_[r].op == Op::full || (group_[size_t(r)] >= 0 && find(group_[size_t(r)]) == int(g))) continue;
        auto& v = readers[r];
        if (std::find(v.begin(), v.end(), int(g)) == v.end()) v.push_back(int(g));
      }
  }
  for (auto& [node, gs] : readers) {
    for (size_t i = 1; i < gs.size(); ++i) {
      int a = find(gs[0]), b = find(gs[i]);
      if (a == b || !groups_[size_t(a)].alive || !groups_[size_t(b)].alive) continue;
      if (!reaches(a, b) && !reaches(b, a) && can_merge(a, b)) merge(a, b);
    }
  }
  // Renumber: group_ and every group's inputs point to live groups.
  std::vector<int> renum(groups_.size(), -1);
  std::vector<Group> live;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!groups_[g].alive) continue;
    renum[g] = int(live.size());
    live.push_back(std::move(groups_[g]));
  }
  for (int& gid : group_)
    if (gid >= 0) gid = renum[size_t(find(gid))];
  for (Group& gr : live) {
    for (int& in : gr.inputs) in = renum[size_t(find(in))];
    gr.view_reads.clear();
  }
  groups_ = std::move(live);
  visit_mark_.assign(groups_.size(), 0);
  parent_.resize(groups_.size());
  for (size_t g = 0; g < parent_.size(); ++g) parent_[g] = int(g);
}

void Lowering::form_groups() {
  for (NodeId n = 0; n < NodeId(g_.size()); ++n) {
    const Node& nd = g_[n];
    if (nd.op == Op::parameter || nd.op == Op::constant || nd.op == Op::full || is_alias(nd.op) ||
        is_strided_view(nd.op))
      continue;
    switch (ir::op_class(nd.op)) {
      case ir::OpClass::elementwise: {
        int joined = -1;
        if (fuse_) {
          for (NodeId x : nd.inputs) {
            if (group_[size_t(x)] < 0) continue;
            int gid = find(group_[size_t(x)]);
            const Group& gr = groups_[size_t(gid)];
            // A loop that already ends in a reduction still takes nodes
            // computed alongside it (can_join keeps out those that read
            // the reduction's result).
            if (gr.kind != Group::Kind::loop || gr.iter != nd.shape) continue;
            if (can_join(n, gid)) {
              joined = gid;
              break;
            }
          }
        }
        if (joined < 0) joined = new_group(Group::Kind::loop, nd.shape);
        add_to(n, joined);
        break;
      }
      case ir::OpClass::reduction: {
        NodeId x = nd.inputs[0];
        int gid = group_[size_t(x)] >= 0 ? find(group_[size_t(x)]) : -1;
        int joined = -1;
        if (fuse_ && gid >= 0) {
          const Group& gr = groups_[size_t(gid)];
          if (gr.kind == Group::Kind::loop && gr.reduce < 0 && gr.iter == g_[x].shape && can_join(n, gid)) joined = gid;
        }
        if (joined < 0) joined = new_group(Group::Kind::loop, g_[x].shape);
        add_to(n, joined);
        groups_[size_t(joined)].reduce = n;
        break;
      }
      default: {
        int gid = new_group(Group::Kind::opaque, nd.shape);
        add_to(n, gid);
        break;
      }
    }
  }
}

int Lowering::temp_slot(NodeId x) {
  if (slot_[size_t(x)] >= 0) return slot_[size_t(x)];
  const Node& n = g_[x];
  Executable::Slot s;
  s.kind = Executable::Slot::Kind::temp;
  s.bytes = numel(n.shape) * int64_t(itemsize(n.dtype));
  s.op = ir::op_name(n.op).data();
  s.loc = n.loc;
  s.site = exec::site_of(n.loc);
  exe_.slots.push_back(std::move(s));
  producer_.push_back(-1);
  slot_[size_t(x)] = int(exe_.slots.size() - 1);
  return slot_[size_t(x)];
}

// The slot holding x's value, materialising x if needed; `reader` is the
// group that reads it (-1 for outputs).
int Lowering::buffer_of(NodeId x, int reader) {
  const Node& n = g_[x];
  int s = -1;
  if (is_alias(n.op)) return buffer_of(n.inputs[0], reader);
  if (n.op == Op::parameter || n.op == Op::constant) {
    return slot_[size_t(x)];
  } else if (n.op == Op::full || is_strided_view(n.op)) {
    if (copy_group_[size_t(x)] < 0) {
      int gid = new_group(n.op == Op::full ? Group::Kind::fill : Group::Kind::copy, n.shape);
      groups_[size_t(gid)].members.push_back(x);
      copy_group_[size_t(x)] = gid;
      s = temp_slot(x);
      producer_[size_t(s)] = gid;
    }
    s = slot_[size_t(x)];
  } else {
    int gid = group_[size_t(x)];
    s = temp_slot(x);
    producer_[size_t(s)] = gid;
    if (groups_[size_t(gid)].kind == Group::Kind::loop && groups_[size_t(gid)].reduce != x) stored_[size_t(x)] = true;
  }
  int p = producer_[size_t(s)];
  if (reader >= 0 && p >= 0 && p != reader) groups_[size_t(reader)].deps.insert(p);
  return s;
}

Source Lowering::resolve(NodeId x, int reader) {
  const Node& n = g_[x];
  if (n.op == Op::full) return {true, n.attrs.value, -1, {}};
  if (!is_strided_view(n.op)) {
    Source s;
    s.slot = buffer_of(x, reader);
    s.view.strides = contiguous_strides(n.shape);
    return s;
  }
  Source in = resolve(n.inputs[0], reader);
  if (in.is_const) return in;
  const Shape& is = g_[n.inputs[0]].shape;
  Source out;
  out.slot = in.slot;
  out.view.offset = in.view.offset;
  switch (n.op) {
    case Op::transpose:
      for (int64_t p : n.attrs.axes) out.view.strides.push_back(in.view.strides[size_t(p)]);
      break;
    case Op::broadcast_to: {
      size_t off = n.shape.size() - is.size();
      for (size_t d = 0; d < n.shape.size(); ++d)
        out.view.strides.push_back(d < off || is[d - off] == 1 ? 0 : in.view.strides[d - off]);
      break;
    }
    default:  // slice
      for (size_t d = 0; d < n.shape.size(); ++d) {
        out.view.offset += n.attrs.starts[d] * in.view.strides[d];
        out.view.strides.push_back(n.attrs.steps[d] * in.view.strides[d]);
      }
      break;
  }
  return out;
}

void Lowering::materialise() {
  // Inputs and constants have slots from the start.
  for (NodeId n = 0; n < NodeId(g_.size()); ++n) {
    const Node& nd = g_[n];
    if (nd.op != Op::parameter && nd.op != Op::constant) continue;
    Executable::Slot s;
    s.kind = nd.op == Op::parameter ? Executable::Slot::Kind::input : Executable::Slot::Kind::constant;
    s.input = nd.param;
    if (nd.op == Op::constant) s.constant = nd.constant;
    s.bytes = numel(nd.shape) * int64_t(itemsize(nd.dtype));
    exe_.slots.push_back(std::move(s));
    producer_.push_back(-1);
    slot_[size_t(n)] = int(exe_.slots.size() - 1);
  }
  // Outputs first: the copies and fills they need join the groups below.
  for (NodeId out : g_.outputs) buffer_of(out, -1);
  // Groups may be appended (copies, fills) while this runs.
  for (size_t gid = 0; gid < groups_.size(); ++gid) {
    Group& gr = groups_[gid];
    int self = int(gid);
    if (gr.kind == Group::Kind::opaque) {
      for (NodeId x : g_[gr.members[0]].inputs) buffer_of(x, self);
      temp_slot(gr.members[0]);
      producer_[size_t(slot_[size_t(gr.members[0])])] = self;
      continue;
    }
    if (gr.kind == Group::Kind::copy) {
      resolve(g_[gr.members[0]].inputs[0], self);
      continue;
    }
    if (gr.kind == Group::Kind::fill) continue;
    for (NodeId m : gr.members) {
      const Node& nd = g_[m];
      for (NodeId x : nd.inputs) {
        if (group_[size_t(x)] == self) continue;
        if (ir::is_random(nd.op)) {
          if (g_[x].op != Op::full) buffer_of(x, self);
        } else {
          resolve(x, self);
        }
      }
    }
    if (gr.reduce >= 0) {
      int s = temp_slot(gr.reduce);
      producer_[size_t(s)] = self;
    }
  }
}

std::vector<int> Lowering::schedule() {
  const size_t n = groups_.size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> readers(n);
  for (size_t gid = 0; gid < n; ++gid)
    for (int d : groups_[gid].deps) {
      ++pending[gid];
      readers[size_t(d)].push_back(int(gid));
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t gid = 0; gid < n; ++gid)
    if (pending[gid] == 0) ready.push(int(gid));
  std::vector<int> order;
  while (!ready.empty()) {
    int gid = ready.top();
    ready.pop();
    order.push_back(gid);
    for (int r : readers[size_t(gid)])
      if (--pending[size_t(r)] == 0) ready.push(r);
  }
  if (order.size() != n) throw RuntimeError("internal error: the fused kernels depend on each other in a cycle");
  return order;
}

std::string Lowering::kernel_name(int gid) const {
  const Group& gr = groups_[size_t(gid)];
  if (gr.kind != Group::Kind::loop || gr.members.size() == 1) return std::string(ir::op_name(g_[gr.members[0]].op));
  std::vector<std::string_view> ops;
  for (NodeId m : gr.members) {
    std::string_view name = ir::op_name(g_[m].op);
    if (std::find(ops.begin(), ops.end(), name) == ops.end()) ops.push_back(name);
  }
  std::string list;
  for (size_t i = 0; i < ops.size() && i < 4; ++i) list += fmt::format("{}{}", i ? "+" : "", ops[i]);
  if (ops.size() > 4) list += "+...";
  return fmt::format("{}[{}]", gr.reduce >= 0 ? "reduce_fusion" : "loop_fusion", list);
}

// ---- Register programs ------------------------------------------------------

class ProgramBuilder {
 public:
  explicit ProgramBuilder(Shape iter) { k_.iter = std::move(iter); }

  int vreg(RegClass c) {
    classes_.push_back(c);
    return int(classes_.size() - 1);
  }
  int load(int arg, Dtype dtype, const View& view) {
    for (const auto& [l, r] : loads_)
      if (l.arg == arg && l.dtype == dtype && l.view == view) return r;
    Load l;
    l.arg = arg;
    l.dtype = dtype;
    l.view = view;
    l.cls = class_of(dtype);
    int r = vreg(l.cls);
    loads_.push_back({l, r});
    return r;
  }
  int constant(RegClass c, double v) {
    for (const auto& [key, r] : consts_)
      if (key.first == c && key.second == v) return r;
    int r = vreg(c);
    emit(c == RegClass::f ? Code::const_f : Code::const_i, r, -1, -1, -1, v);
    consts_.push_back({{c, v}, r});
    return r;
  }
  int op(Code code, RegClass out, int a = -1, int b = -1, int c = -1) {
    int r = vreg(out);
    emit(code, r, a, b, c, 0);
    return r;
  }
  int op_imm(Code code, RegClass out, int a, int b, double imm) {
    int r = vreg(out);
    emit(code, r, a, b, -1, imm);
    return r;
  }
  int iota(int64_t div, int64_t mod) {
    int r = vreg(RegClass::i);
    emit(Code::iota, r, -1, -1, -1, 0);
    code_.back().div = div;
    code_.back().mod = mod;
    return r;
  }
  void store(int r, int out, Dtype dtype) { stores_.push_back({r, out, dtype}); }
  void reduce(Reduce red, int r) {
    reduce_ = red;
    reduce_src_ = r;
  }
  RegClass cls(int r) const { return classes_[size_t(r)]; }

  FusedKernel finish();

 private:
  struct VInstr {
    Code code;
    int dst, a, b, c;
    double imm;
    int64_t div = 1, mod = 1;
  };
  void emit(Code code, int dst, int a, int b, int c, double imm) { code_.push_back({code, dst, a, b, c, imm}); }

  FusedKernel k_;
  std::vector<RegClass> classes_;
  std::vector<std::pair<Load, int>> loads_;
  std::vector<std::pair<std::pair<RegClass, double>, int>> consts_;
  std::vector<VInstr> code_;
  struct VStore {
    int src, out;
    Dtype dtype;
  };
  std::vector<VStore> stores_;
  std::optional<Reduce> reduce_;
  int reduce_src_ = -1;
};

// Removes unit axes and merges neighbouring axes that every operand walks
// contiguously, so that the interpreter's runs along the last axis are long.
void collapse(FusedKernel& k) {
  std::vector<std::vector<int64_t>*> lists;
  for (Load& l : k.loads) lists.push_back(&l.view.strides);
  std::vector<int64_t> store_strides = contiguous_strides(k.iter);
  lists.push_back(&store_strides);
  std::vector<int64_t> marker;  // keeps an argmax axis apart
  if (k.reduce) {
    lists.push_back(&k.reduce->out_strides);
    if (k.reduce->axis >= 0) {
      marker.assign(k.iter.size(), 0);
      marker[size_t(k.reduce->axis)] = 1;
      lists.push_back(&marker);
    }
  }
  Shape iter;
  std::vector<std::vector<int64_t>> out(lists.size());
  int axis = -1;
  for (size_t d = 0; d < k.iter.size(); ++d) {
    bool is_axis = k.reduce && int(d) == k.reduce->axis;
    if (k.iter[d] == 1 && !is_axis) continue;
    bool merge = !iter.empty() && !is_axis && axis != int(iter.size()) - 1;
    if (merge)
      for (size_t i = 0; i < lists.size(); ++i)
        if (out[i].back() != (*lists[i])[d] * k.iter[d]) merge = false;
    if (merge) {
      iter.back() *= k.iter[d];
      for (size_t i = 0; i < lists.size(); ++i) out[i].back() = (*lists[i])[d];
    } else {
      iter.push_back(k.iter[d]);
      for (size_t i = 0; i < lists.size(); ++i) out[i].push_back((*lists[i])[d]);
      if (is_axis) axis = int(iter.size()) - 1;
    }
  }
  if (iter.empty()) {
    iter.push_back(1);
    for (auto& o : out) o.push_back(0);
  }
  k.iter = iter;
  for (size_t i = 0; i < lists.size(); ++i) *lists[i] = out[i];
  if (k.reduce) k.reduce->axis = axis;
}

FusedKernel ProgramBuilder::finish() {
  // Liveness: loads are live from the start, stores and the reduction read
  // at the end.
  const int end = int(code_.size());
  std::vector<int> last(classes_.size(), -1);
  auto use = [&](int r, int at) {
    if (r >= 0) last[size_t(r)] = std::max(last[size_t(r)], at);
  };
  for (int i = 0; i < end; ++i) {
    use(code_[size_t(i)].a, i);
    use(code_[size_t(i)].b, i);
    use(code_[size_t(i)].c, i);
  }
  for (const VStore& s : stores_) use(s.src, end);
  use(reduce_src_, end);
  // A load of one broadcast element is hoisted out of the tile loop, so
  // its register must never be reused.
  for (auto& [l, r] : loads_) {
    bool invariant = true;
    for (int64_t st : l.view.strides) invariant = invariant && st == 0;
    l.invariant = invariant;
    if (invariant) last[size_t(r)] = end + 1;
  }

  std::vector<int> phys(classes_.size(), -1);
  std::vector<int> free_f, free_i;
  int nf = 0, ni = 0;
  auto alloc = [&](int r) {
    auto& fl = classes_[size_t(r)] == RegClass::f ? free_f : free_i;
    int& count = classes_[size_t(r)] == RegClass::f ? nf : ni;
    if (!fl.empty()) {
      phys[size_t(r)] = fl.back();
      fl.pop_back();
    } else {
      phys[size_t(r)] = count++;
    }
  };
  auto release = [&](int r, int at) {
    if (r < 0 || last[size_t(r)] != at || phys[size_t(r)] < 0) return;
    (classes_[size_t(r)] == RegClass::f ? free_f : free_i).push_back(phys[size_t(r)]);
    last[size_t(r)] = -2;  // released once
  };
  for (auto& [l, r] : loads_) {
    alloc(r);
    l.dst = int16_t(phys[size_t(r)]);
    k_.loads.push_back(l);
  }
  for (int i = 0; i < end; ++i) {
    const VInstr& v = code_[size_t(i)];
    Instr in;
    in.code = v.code;
    in.imm = v.imm;
    in.div = v.div;
    in.mod = v.mod;
    in.a = int16_t(v.a >= 0 ? phys[size_t(v.a)] : -1);
    in.b = int16_t(v.b >= 0 ? phys[size_t(v.b)] : -1);
    in.c = int16_t(v.c >= 0 ? phys[size_t(v.c)] : -1);
    release(v.a, i);
    release(v.b, i);
    release(v.c, i);
    alloc(v.dst);
    in.dst = int16_t(phys[size_t(v.dst)]);
    k_.code.push_back(in);
    if (last[size_t(v.dst)] < 0 && last[size_t(v.dst)] != -2) release(v.dst, -1);  // dead result
  }
  for (const VStore& s : stores_) k_.stores.push_back({classes_[size_t(s.src)], int16_t(phys[size_t(s.src)]), s.out, s.dtype});
  if (reduce_) {
    reduce_->cls = classes_[size_t(reduce_src_)];
    reduce_->src = int16_t(phys[size_t(reduce_src_)]);
    k_.reduce = reduce_;
  }
  k_.f_regs = nf;
  k_.i_regs = ni;
  collapse(k_);
  return std::move(k_);
}

// An operand of an instruction: a register, or a constant to be used as an
// immediate where an instruction takes one.
struct Opnd {
  int reg = -1;
  bool is_const = false;
  double value = 0;
  bool invariant = false;  // a load of one broadcast element
};

// Emits the instructions of one elementwise node; returns the result's
// register.
int emit_node(ProgramBuilder& b, const Node& n, const std::vector<Opnd>& opnds, const std::vector<Dtype>& in_dtypes,
              const Shape& iter) {
  const Dtype t = n.dtype;
  const bool f = is_floating(t);
  auto reg = [&](size_t i) {
    const Opnd& o = opnds[i];
    return o.is_const ? b.constant(class_of(in_dtypes[i]), o.value) : o.reg;
  };
  auto fix = [&](int r) {
    // Round to the node's storage precision, as an unfused kernel would
    // when it stores the result.
    if (t == Dtype::f16) return b.op(Code::round_f16, RegClass::f, r);
    if (t == Dtype::bf16) return b.op(Code::round_bf16, RegClass::f, r);
    if (t == Dtype::i32) return b.op(Code::wrap_i32, RegClass::i, r);
    return r;
  };
  auto un = [&](Code fc, Code ic) { return fix(b.op(f ? fc : ic, f ? RegClass::f : RegClass::i, reg(0))); };
  // A float binary op with one constant operand takes it as an immediate:
  // `imm` for (x op c), `rimm` for (c op x); kNone when it has no such form.
  const Code kNone = Code::const_f;
  auto bin = [&](Code fc, Code ic, Code imm = Code::const_f, Code rimm = Code::const_f) {
    if (f && opnds[1].is_const && !opnds[0].is_const && imm != kNone)
      return fix(b.op_imm(imm, RegClass::f, reg(0), -1, opnds[1].value));
    if (f && opnds[0].is_const && !opnds[1].is_const && rimm != kNone)
      return fix(b.op_imm(rimm, RegClass::f, reg(1), -1, opnds[0].value));
    return fix(b.op(f ? fc : ic, f ? RegClass::f : RegClass::i, reg(0), reg(1)));
  };
  auto cmp = [&](Code fc, Code ic, Code imm, Code rimm) {
    bool fin = is_floating(in_dtypes[0]);
    if (fin && opnds[1].is_const && !opnds[0].is_const) return b.op_imm(imm, RegClass::i, reg(0), -1, opnds[1].value);
    if (fin && opnds[0].is_const && !opnds[1].is_const) return b.op_imm(rimm, RegClass::i, reg(1), -1, opnds[0].value);
    return b.op(fin ? fc : ic, RegClass::i, reg(0), reg(1));
  };
  switch (n.op) {
    case Op::full: return b.constant(f ? RegClass::f : RegClass::i, n.attrs.value);
    case Op::iota: {
      int64_t inner = 1;
      for (size_t d = size_t(n.attrs.axis) + 1; d < iter.size(); ++d) inner *= iter[d];
      int r = b.iota(inner, std::max<int64_t>(iter[size_t(n.attrs.axis)], 1));
      return f ? fix(b.op(Code::i_to_f, RegClass::f, r)) : fix(r);
    }
    case Op::random_bits: return b.op(Code::rand_bits, RegClass::i, reg(0));
    case Op::random_uniform: return b.op(Code::rand_uniform, RegClass::f, reg(0));
    case Op::random_normal: return b.op(Code::rand_normal, RegClass::f, reg(0));
    case Op::neg: return un(Code::neg, Code::ineg);
    case Op::exp: return un(Code::exp, Code::exp);
    case Op::log: return un(Code::log, Code::log);
    case Op::tanh: return un(Code::tanh, Code::tanh);
    case Op::sqrt: return un(Code::sqrt, Code::sqrt);
    case Op::rsqrt: return un(Code::rsqrt, Code::rsqrt);
    case Op::relu: return un(Code::relu, Code::irelu);
    case Op::gelu: return un(Code::gelu, Code::gelu);
    case Op::sigmoid: return un(Code::sigmoid, Code::sigmoid);
    case Op::abs: return un(Code::abs, Code::iabs);
    case Op::logical_not: return b.op(Code::inot, RegClass::i, reg(0));
    case Op::stop_gradient: return reg(0);
    case Op::cast: {
      Dtype from = in_dtypes[0];
      int a = reg(0);
      if (is_floating(from) && f) return fix(a);
      if (is_floating(from)) return t == Dtype::boolean ? b.op(Code::f_to_bool, RegClass::i, a)
                                                        : fix(b.op(Code::f_to_i, RegClass::i, a));
      if (f) return fix(b.op(Code::i_to_f, RegClass::f, a));
      if (t == Dtype::boolean) return b.op(Code::to_bool, RegClass::i, a);
      return fix(a);
    }
    case Op::add: return bin(Code::add, Code::iadd, Code::add_imm, Code::add_imm);
    case Op::sub: return bin(Code::sub, Code::isub, Code::sub_imm, Code::rsub_imm);
    case Op::mul: return bin(Code::mul, Code::imul, Code::mul_imm, Code::mul_imm);
    case Op::div:
      // Dividing by one broadcast element (a mean's count, a bias
      // correction): one reciprocal per tile, then multiplications.
      if (f && opnds[1].invariant && !opnds[0].is_const)
        return fix(b.op(Code::mul, RegClass::f, reg(0), b.op(Code::rcp, RegClass::f, reg(1))));
      return bin(Code::div, Code::idiv, Code::div_imm, Code::rdiv_imm);
    case Op::pow: return bin(Code::pow, Code::pow);
    case Op::maximum: return bin(Code::max, Code::imax, Code::max_imm, Code::max_imm);
    case Op::minimum: return bin(Code::min, Code::imin, Code::min_imm, Code::min_imm);
    case Op::eq: return cmp(Code::eq, Code::ieq, Code::eq_imm, Code::eq_imm);
    case Op::ne: return cmp(Code::ne, Code::ine, Code::ne_imm, Code::ne_imm);
    case Op::lt: return cmp(Code::lt, Code::ilt, Code::lt_imm, Code::gt_imm);
    case Op::le: return cmp(Code::le, Code::ile, Code::le_imm, Code::ge_imm);
    case Op::gt: return cmp(Code::gt, Code::igt, Code::gt_imm, Code::lt_imm);
    case Op::ge: return cmp(Code::ge, Code::ige, Code::ge_imm, Code::le_imm);
    case Op::logical_and: return b.op(Code::iand, RegClass::i, reg(0), reg(1));
    case Op::logical_or: return b.op(Code::ior, RegClass::i, reg(0), reg(1));
    case Op::where:
      if (f && opnds[2].is_const && !opnds[1].is_const)
        return b.op_imm(Code::where_f_imm_b, RegClass::f, reg(0), reg(1), opnds[2].value);
      if (f && opnds[1].is_const && !opnds[2].is_const)
        return b.op_imm(Code::where_f_imm_a, RegClass::f, reg(0), reg(2), opnds[1].value);
      return b.op(f ? Code::where_f : Code::where_i, f ? RegClass::f : RegClass::i, reg(0), reg(1), reg(2));
    default: throw RuntimeError(fmt::format("internal error: {} is not elementwise", ir::op_name(n.op)));
  }
}

std::shared_ptr<KernelSpec> Lowering::build_loop(int gid, std::vector<int>& in_slots, std::vector<int>& out_slots) {
  const Group& gr = groups_[size_t(gid)];
  ProgramBuilder b(gr.iter);
  std::map<NodeId, int> reg;
  auto arg_of = [&](int slot) {
    auto it = std::find(in_slots.begin(), in_slots.end(), slot);
    if (it != in_slots.end()) return int(it - in_slots.begin());
    in_slots.push_back(slot);
    return int(in_slots.size() - 1);
  };
  // Output buffer indices are fixed up below, once the inputs are known.
  std::vector<std::pair<int, int>> outs;  // (slot, store index or -1 for the reduction)
  auto operand_of = [&](NodeId x) -> Opnd {
    if (auto it = reg.find(x); it != reg.end()) return {it->second, false, 0};
    Source s = resolve(x, gid);
    const Node& xn = g_[x];
    if (s.is_const) return {-1, true, s.value};
    bool invariant = std::all_of(s.view.strides.begin(), s.view.strides.end(), [](int64_t st) { return st == 0; });
    return {b.load(arg_of(s.slot), xn.dtype, s.view), false, 0, invariant};
  };
  auto operand = [&](NodeId x) -> int {
    Opnd o = operand_of(x);
    return o.is_const ? b.constant(class_of(g_[x].dtype), o.value) : o.reg;
  };

  if (gr.kind == Group::Kind::copy || gr.kind == Group::Kind::fill) {
    NodeId v = gr.members[0];
    int r = operand(v);  // a view load, or an immediate
    reg[v] = r;
  }
  for (NodeId m : gr.members) {
    if (gr.kind != Group::Kind::loop || m == gr.reduce) continue;
    const Node& n = g_[m];
    std::vector<Opnd> in;
    std::vector<Dtype> dts;
    for (NodeId x : n.inputs) {
      dts.push_back(g_[x].dtype);
      if (ir::is_random(n.op) && reg.find(x) == reg.end()) {
        if (g_[x].op == Op::full) {
          in.push_back({-1, true, g_[x].attrs.value});
        } else {
          View v;
          v.strides.assign(gr.iter.size(), 0);
          in.push_back({b.load(arg_of(buffer_of(x, gid)), g_[x].dtype, v), false, 0});
        }
        continue;
      }
      in.push_back(operand_of(x));
    }
    reg[m] = emit_node(b, n, in, dts, gr.iter);
  }
  // Stores: copies and fills store their one value; loops their materialised members.
  std::vector<std::pair<int, std::pair<int, Dtype>>> stores;  // (reg, (slot, dtype))
  if (gr.kind != Group::Kind::loop) {
    NodeId v = gr.members[0];
    stores.push_back({reg[v], {slot_[size_t(v)], g_[v].dtype}});
  } else {
    for (NodeId m : gr.members)
      if (m != gr.reduce && stored_[size_t(m)]) stores.push_back({reg[m], {slot_[size_t(m)], g_[m].dtype}});
  }
  int reduce_reg = -1;
  if (gr.reduce >= 0) reduce_reg = operand(g_[gr.reduce].inputs[0]);

  const int n_in = int(in_slots.size());
  for (auto& [r, sd] : stores) {
    out_slots.push_back(sd.first);
    b.store(r, n_in + int(out_slots.size()) - 1, sd.second);
  }
  if (gr.reduce >= 0) {
    const Node& rn = g_[gr.reduce];
    out_slots.push_back(slot_[size_t(gr.reduce)]);
    Reduce red;
    red.kind = rn.op == Op::reduce_sum   ? ReduceKind::sum
               : rn.op == Op::reduce_max ? ReduceKind::max
               : rn.op == Op::reduce_min ? ReduceKind::min
                                         : ReduceKind::argmax;
    red.out = n_in + int(out_slots.size()) - 1;
    red.dtype = rn.dtype;
    red.out_size = numel(rn.shape);
    // Output strides over the iteration space: 0 on reduced axes.
    std::vector<bool> reduced(gr.iter.size(), false);
    for (int64_t a : rn.attrs.axes) reduced[size_t(a)] = true;
    red.out_strides.assign(gr.iter.size(), 0);
    int64_t stride = 1;
    for (size_t d = gr.iter.size(); d-- > 0;) {
      if (reduced[d]) continue;
      red.out_strides[d] = stride;
      stride *= gr.iter[d];
    }
    if (red.kind == ReduceKind::argmax) red.axis = int(rn.attrs.axes[0]);
    b.reduce(red, reduce_reg);
  }
  auto spec = std::make_shared<KernelSpec>();
  spec->name = prof::intern(kernel_name(gid));
  spec->body = b.finish();
  return spec;
}

std::shared_ptr<KernelSpec> Lowering::build_opaque(int gid, std::vector<int>& in_slots, std::vector<int>& out_slots) {
  const Node& n = g_[groups_[size_t(gid)].members[0]];
  std::vector<const Node*> in;
  for (NodeId x : n.inputs) {
    in_slots.push_back(buffer_of(x, gid));
    in.push_back(&g_[x]);
  }
  out_slots.push_back(slot_[size_t(groups_[size_t(gid)].members[0])]);
  auto spec = std::make_shared<KernelSpec>();
  spec->name = prof::intern(kernel_name(gid));
  const ir::Attrs& a = n.attrs;
  switch (n.op) {
    case Op::matmul: {
      MatmulKernel k;
      k.dtype = n.dtype;
      const Shape &x = in[0]->shape, &y = in[1]->shape;
      k.transpose_a = a.transpose_a;
      k.transpose_b = a.transpose_b;
      k.m = n.shape[n.shape.size() - 2];
      k.n = n.shape.back();
      k.k = a.transpose_a ? x[x.size() - 2] : x.back();
      k.batch.assign(n.shape.begin(), n.shape.end() - 2);
      auto strides = [&](const Shape& s) {
        size_t nb = s.size() - 2, off = k.batch.size() - nb;
        std::vector<int64_t> st(k.batch.size(), 0);
        int64_t acc = 1;
        for (size_t d = k.batch.size(); d-- > off;) {
          int64_t e = s[d - off];
          st[d] = e == 1 ? 0 : acc;
          acc *= e;
        }
        return st;
      };
      k.a_batch_stride = strides(x);
      k.b_batch_stride = strides(y);
      spec->body = k;
      break;
    }
    case Op::gather: {
      GatherKernel k;
      k.dtype = n.dtype;
      k.index_dtype = in[1]->dtype;
      k.rows = in[0]->shape[0];
      k.row_size = numel(in[0]->shape) / std::max<int64_t>(k.rows, 1);
      if (k.rows == 0) k.row_size = numel(Shape(in[0]->shape.begin() + 1, in[0]->shape.end()));
      k.count = numel(in[1]->shape);
      spec->body = k;
      break;
    }
    case Op::scatter_add: {
      ScatterAddKernel k;
      k.dtype = n.dtype;
      k.index_dtype = in[0]->dtype;
      k.rows = n.shape[0];
      k.row_size = numel(Shape(n.shape.begin() + 1, n.shape.end()));
      k.count = numel(in[0]->shape);
      spec->body = k;
      break;
    }
    case Op::concat: {
      ConcatKernel k;
      k.dtype = n.dtype;
      k.outer = numel(Shape(n.shape.begin(), n.shape.begin() + a.axis));
      for (const Node* x : in) k.chunk.push_back(numel(Shape(x->shape.begin() + a.axis, x->shape.end())));
      spec->body = k;
      break;
    }
    case Op::pad: {
      PadKernel k;
      k.dtype = n.dtype;
      k.in_shape = in[0]->shape;
      k.out_shape = n.shape;
      k.starts = a.starts;
      k.steps = a.steps;
      spec->body = k;
      break;
    }
    case Op::attention:
    case Op::attention_bwd: {
      AttentionKernel k;
      const Shape &q = in[0]->shape, &kk = in[1]->shape, &v = in[2]->shape;
      size_t r = q.size();
      k.dtype = in[0]->dtype;
      k.batch = numel(Shape(q.begin(), q.end() - 2));
      k.sq = q[r - 2];
      k.sk = kk[r - 2];
      k.d = q[r - 1];
      k.dv = v[r - 1];
      k.causal = a.causal;
      k.scale = float(a.value);
      if (n.op == Op::attention) spec->body = k;
      else spec->body = AttentionBwdKernel{k};
      break;
    }
    default: throw RuntimeError(fmt::format("internal error: no kernel for {}", ir::op_name(n.op)));
  }
  return spec;
}

std::shared_ptr<Executable> Lowering::run() {
  for (const Node& n : g_.nodes)
    if (n.shape.size() > 16) throw ShapeError(fmt::format("{} at {}: arrays of more than 16 axes are not supported",
                                                          ir::op_name(n.op), ir::format_loc(n.loc)));
  stored_.assign(g_.size(), false);
  copy_group_.assign(g_.size(), -1);
  exe_.inputs = g_.params.size();
  {
    exec::Phase phase("pass fusion", prof::SpanKind::compile);
    int64_t t0 = prof::monotonic_ns();
    form_groups();
    if (fuse_) merge_groups();
    fusion_ns_ = prof::monotonic_ns() - t0;
  }
  materialise();
  std::vector<int> order = schedule();

  std::vector<int> last_read(exe_.slots.size(), -1);
  for (int gid : order) {
    const Group& gr = groups_[size_t(gid)];
    std::vector<int> in_slots, out_slots;
    std::shared_ptr<KernelSpec> spec =
        gr.kind == Group::Kind::opaque ? build_opaque(gid, in_slots, out_slots) : build_loop(gid, in_slots, out_slots);
    Executable::Step step;
    step.spec = std::move(spec);
    step.slots = in_slots;
    step.slots.insert(step.slots.end(), out_slots.begin(), out_slots.end());
    step.outputs = int(out_slots.size());
    for (int s : in_slots) last_read[size_t(s)] = int(exe_.steps.size());
    exe_.steps.push_back(std::move(step));
  }
  // Release temporaries after their last reader, unless returned.
  std::vector<bool> is_output(exe_.slots.size(), false);
  for (NodeId out : g_.outputs) {
    NodeId r = out;
    while (is_alias(g_[r].op)) r = g_[r].inputs[0];
    int s = slot_[size_t(r)];
    is_output[size_t(s)] = true;
    exe_.outputs.push_back({s, g_[out].shape, g_[out].dtype});
  }
  int64_t live = 0;
  for (size_t i = 0; i < exe_.steps.size(); ++i) {
    Executable::Step& st = exe_.steps[i];
    for (size_t j = st.slots.size() - size_t(st.outputs); j < st.slots.size(); ++j)
      live += exe_.slots[size_t(st.slots[j])].bytes;
    exe_.planned_peak = std::max(exe_.planned_peak, live);
    for (size_t s = 0; s < exe_.slots.size(); ++s) {
      if (exe_.slots[s].kind != Executable::Slot::Kind::temp || is_output[s]) continue;
      bool written_here = false;
      for (size_t j = st.slots.size() - size_t(st.outputs); j < st.slots.size(); ++j)
        written_here |= st.slots[j] == int(s);
      if (last_read[s] == int(i) || (written_here && last_read[s] < 0)) {
        st.release.push_back(int(s));
        live -= exe_.slots[s].bytes;
      }
    }
  }
  uint32_t nodes = 0;
  for (const Node& n : g_.nodes) nodes += n.op != Op::parameter;
  exe_.nodes = nodes;

  // The kernel listing, appended to the IR text of compile events.
  std::string text = fmt::format("kernels: {} (temporaries peak at {} bytes)\n", exe_.steps.size(), exe_.planned_peak);
  for (size_t i = 0; i < exe_.steps.size(); ++i) {
    const Executable::Step& st = exe_.steps[i];
    std::string ins, outs;
    for (size_t j = 0; j < st.slots.size(); ++j) {
      std::string& t = j + size_t(st.outputs) < st.slots.size() ? ins : outs;
      t += fmt::format("{}s{}", t.empty() ? "" : ", ", st.slots[j]);
    }
    text += fmt::format("  k{} {}({}) -> {}\n", i, st.spec->name, ins, outs);
  }
  exe_.text = std::move(text);
  return std::make_shared<Executable>(std::move(exe_));
}

}  // namespace

std::shared_ptr<Executable> lower(const Graph& graph, bool fuse, LowerStats* stats) {
  Lowering l(graph, fuse);
  auto exe = l.run();
  if (stats) stats->fusion_ns = l.fusion_ns_;
  return exe;
}

}  // namespace loupe::rt::compile
