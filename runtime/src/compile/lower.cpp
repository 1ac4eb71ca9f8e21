// Lowering: from an optimised graph to an executable.
//
// 1. Grouping nodes into kernels (fusion.h).
// 2. Materialisation. A value gets a buffer when something outside its
//    group reads it, when it is an output, or when a kernel that is not a
//    fused loop needs it as an operand (a view then gets a copy kernel, a
//    constant a fill kernel).
// 3. Scheduling groups in dependency order, building each kernel's spec
//    (a register program for loops, program_builder.h), and planning when
//    each temporary buffer can be released.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "compile/executable.h"
#include "compile/fusion.h"
#include "compile/ir_names.h"
#include "compile/program_builder.h"
#include "exec/callsite_cache.h"
#include "exec/nvtx.h"
#include "ir/graph.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::compile {

using namespace exec;

namespace {

// Where a loaded value comes from: an immediate, or a slot through a view.
struct Source {
  bool is_const = false;
  double value = 0;
  int slot = -1;
  View view;
};

// A gather or scatter_add kernel of `dtype`: rows of `table` (its first
// axis), picked by the indices of `indices`.
template <typename RowKernel>
RowKernel row_indexing(Dtype dtype, const Shape& table, const Node& indices) {
  RowKernel k;
  k.dtype = dtype;
  k.index_dtype = indices.dtype;
  k.rows = table[0];
  k.row_size = numel(Shape(table.begin() + 1, table.end()));
  k.count = numel(indices.shape);
  return k;
}

// A reduction's spec but for its output buffer: what it folds, and where
// each element of the iteration space lands in its output.
Reduce reduction_of(const Node& rn, const Shape& iter) {
  Reduce red;
  red.kind = rn.op == Op::reduce_sum   ? ReduceKind::sum
             : rn.op == Op::reduce_max ? ReduceKind::max
             : rn.op == Op::reduce_min ? ReduceKind::min
                                       : ReduceKind::argmax;
  red.dtype = rn.dtype;
  red.out_size = numel(rn.shape);
  // Output strides over the iteration space: 0 on reduced axes.
  std::vector<bool> reduced(iter.size(), false);
  for (int64_t a : rn.attrs.axes) reduced[size_t(a)] = true;
  red.out_strides.assign(iter.size(), 0);
  int64_t stride = 1;
  for (size_t d = iter.size(); d-- > 0;) {
    if (reduced[d]) continue;
    red.out_strides[d] = stride;
    stride *= iter[d];
  }
  if (red.kind == ReduceKind::argmax) red.axis = int(rn.attrs.axes[0]);
  return red;
}

// n = matmul(x, y).
MatmulKernel matmul_kernel(const Node& n, const Shape& x, const Shape& y) {
  const ir::Attrs& a = n.attrs;
  MatmulKernel k;
  k.dtype = n.dtype;
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
  return k;
}

ConcatKernel concat_kernel(const Node& n, const std::vector<const Node*>& in) {
  const ir::Attrs& a = n.attrs;
  ConcatKernel k;
  k.dtype = n.dtype;
  k.outer = numel(Shape(n.shape.begin(), n.shape.begin() + a.axis));
  for (const Node* x : in) k.chunk.push_back(numel(Shape(x->shape.begin() + a.axis, x->shape.end())));
  return k;
}

PadKernel pad_kernel(const Node& n, const Shape& in_shape) {
  PadKernel k;
  k.dtype = n.dtype;
  k.in_shape = in_shape;
  k.out_shape = n.shape;
  k.starts = n.attrs.starts;
  k.steps = n.attrs.steps;
  return k;
}

// n = attention(q, k, v, ...), or its gradient.
AttentionKernel attention_kernel(const Node& n, const std::vector<const Node*>& in) {
  const ir::Attrs& a = n.attrs;
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
  return k;
}

// The kernel of an opaque node n, whose operands are `in`.
KernelBody opaque_body(const Node& n, const std::vector<const Node*>& in) {
  switch (n.op) {
    LOUPE_SOURCE_OPS(LOUPE_OP_CASE)
    LOUPE_ELEMENTWISE_OPS(LOUPE_OP_CASE)
    LOUPE_REDUCTION_OPS(LOUPE_OP_CASE)
    LOUPE_VIEW_OPS(LOUPE_OP_CASE)
    break;
    case Op::matmul: return matmul_kernel(n, in[0]->shape, in[1]->shape);
    case Op::gather: return row_indexing<GatherKernel>(n.dtype, in[0]->shape, *in[1]);
    case Op::scatter_add: return row_indexing<ScatterAddKernel>(n.dtype, n.shape, *in[0]);
    case Op::concat: return concat_kernel(n, in);
    case Op::pad: return pad_kernel(n, in[0]->shape);
    case Op::attention: return attention_kernel(n, in);
    case Op::attention_bwd: return AttentionBwdKernel{attention_kernel(n, in)};
  }
  throw RuntimeError(fmt::format("internal error: no kernel for {}", ir::op_name(n.op)));
}

class Lowering {
 public:
  Lowering(const Graph& g, bool fuse) : g_(g), fuse_(fuse), slot_(g.size(), -1) {}

  std::shared_ptr<Executable> run();
  int64_t fusion_ns() const { return fusion_ns_; }

 private:
  int new_group(Group::Kind kind, Shape iter) {
    Group gr;
    gr.kind = kind;
    gr.iter = std::move(iter);
    groups_.push_back(std::move(gr));
    return int(groups_.size() - 1);
  }

  // ---- materialisation
  int buffer_of(NodeId x, int reader);
  Source resolve(NodeId x, int reader);
  int temp_slot(NodeId x);
  void materialise();

  // ---- specs
  struct Loop;                                                            // a loop kernel being built
  using LoopStores = std::vector<std::pair<int, std::pair<int, Dtype>>>;  // (register, (slot, dtype))
  Opnd loop_operand(Loop& l, NodeId x);
  int loop_register(Loop& l, NodeId x);
  Opnd random_key(Loop& l, NodeId x);
  void emit_member(Loop& l, NodeId m);
  LoopStores loop_stores(Loop& l);
  std::shared_ptr<KernelSpec> build_loop(int gid, std::vector<int>& in_slots, std::vector<int>& out_slots);
  std::shared_ptr<KernelSpec> build_opaque(int gid, std::vector<int>& in_slots, std::vector<int>& out_slots);
  std::vector<int> schedule();
  std::string kernel_name(int gid) const;

  const Graph& g_;
  bool fuse_;
  std::vector<int> group_;  // per node
  std::vector<int> slot_;   // per node
  std::vector<Group> groups_;
  std::vector<int> producer_;    // per slot: the group writing it, -1 if none
  std::vector<bool> stored_;     // per node: a member whose value its group stores
  std::vector<int> copy_group_;  // per node: the copy/fill group materialising a view or constant
  Executable exe_;
  int64_t fusion_ns_ = 0;
};

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
    LOUPE_SOURCE_OPS(LOUPE_OP_CASE)
    LOUPE_ELEMENTWISE_OPS(LOUPE_OP_CASE)
    LOUPE_REDUCTION_OPS(LOUPE_OP_CASE)
    LOUPE_OPAQUE_OPS(LOUPE_OP_CASE)
    case Op::reshape: throw RuntimeError(fmt::format("internal error: {} is not a strided view", ir::op_name(n.op)));
    case Op::transpose:
      for (int64_t p : n.attrs.axes) out.view.strides.push_back(in.view.strides[size_t(p)]);
      break;
    case Op::broadcast_to: {
      size_t off = n.shape.size() - is.size();
      for (size_t d = 0; d < n.shape.size(); ++d)
        out.view.strides.push_back(d < off || is[d - off] == 1 ? 0 : in.view.strides[d - off]);
      break;
    }
    case Op::slice:
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
  // Groups may be appended (copies, fills) while this runs, which moves
  // groups_: each group is read from a copy, never through a reference
  // into it.
  for (size_t gid = 0; gid < groups_.size(); ++gid) {
    const Group gr = groups_[gid];
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

// A loop kernel being built: its register program, the register of each
// value computed so far, and the slots of its inputs.
struct Lowering::Loop {
  int gid;
  const Group& gr;
  ProgramBuilder b;
  std::map<NodeId, int> reg;
  std::vector<int>& in_slots;

  // The kernel's buffer number of input `slot`, taken as a new input if it
  // is not one yet.
  int arg_of(int slot) {
    auto it = std::find(in_slots.begin(), in_slots.end(), slot);
    if (it != in_slots.end()) return int(it - in_slots.begin());
    in_slots.push_back(slot);
    return int(in_slots.size() - 1);
  }
};

// x as an operand of the loop: its register, its constant value, or a load.
Opnd Lowering::loop_operand(Loop& l, NodeId x) {
  if (auto it = l.reg.find(x); it != l.reg.end()) return {it->second, false, 0};
  Source s = resolve(x, l.gid);
  const Node& xn = g_[x];
  if (s.is_const) return {-1, true, s.value};
  bool invariant = std::all_of(s.view.strides.begin(), s.view.strides.end(), [](int64_t st) { return st == 0; });
  return {l.b.load(l.arg_of(s.slot), xn.dtype, s.view), false, 0, invariant};
}

// x in a register of the loop (a constant in a constant register).
int Lowering::loop_register(Loop& l, NodeId x) {
  Opnd o = loop_operand(l, x);
  return o.is_const ? l.b.constant(class_of(g_[x].dtype), o.value) : o.reg;
}

// The key of a random op, from outside the loop: its value if a constant,
// else its one element loaded everywhere.
Opnd Lowering::random_key(Loop& l, NodeId x) {
  if (g_[x].op == Op::full) return {-1, true, g_[x].attrs.value};
  View v;
  v.strides.assign(l.gr.iter.size(), 0);
  return {l.b.load(l.arg_of(buffer_of(x, l.gid)), g_[x].dtype, v), false, 0};
}

// The instructions of member m, given its operands.
void Lowering::emit_member(Loop& l, NodeId m) {
  const Node& n = g_[m];
  std::vector<Opnd> in;
  std::vector<Dtype> dts;
  for (NodeId x : n.inputs) {
    dts.push_back(g_[x].dtype);
    if (ir::is_random(n.op) && l.reg.find(x) == l.reg.end()) {
      in.push_back(random_key(l, x));
      continue;
    }
    in.push_back(loop_operand(l, x));
  }
  l.reg[m] = emit_node(l.b, n, in, dts, l.gr.iter);
}

// Stores: copies and fills store their one value; loops their materialised
// members.
Lowering::LoopStores Lowering::loop_stores(Loop& l) {
  const Group& gr = l.gr;
  LoopStores stores;
  if (gr.kind != Group::Kind::loop) {
    NodeId v = gr.members[0];
    stores.push_back({l.reg[v], {slot_[size_t(v)], g_[v].dtype}});
  } else {
    for (NodeId m : gr.members)
      if (m != gr.reduce && stored_[size_t(m)]) stores.push_back({l.reg[m], {slot_[size_t(m)], g_[m].dtype}});
  }
  return stores;
}

std::shared_ptr<KernelSpec> Lowering::build_loop(int gid, std::vector<int>& in_slots, std::vector<int>& out_slots) {
  const Group& gr = groups_[size_t(gid)];
  Loop l{gid, gr, ProgramBuilder(gr.iter), {}, in_slots};
  if (gr.kind == Group::Kind::copy || gr.kind == Group::Kind::fill) {
    NodeId v = gr.members[0];
    int r = loop_register(l, v);  // a view load, or an immediate
    l.reg[v] = r;
  }
  for (NodeId m : gr.members) {
    if (gr.kind != Group::Kind::loop || m == gr.reduce) continue;
    emit_member(l, m);
  }
  LoopStores stores = loop_stores(l);
  int reduce_reg = -1;
  if (gr.reduce >= 0) reduce_reg = loop_register(l, g_[gr.reduce].inputs[0]);

  // Output buffer numbers follow the inputs, now that they are all known.
  const int n_in = int(in_slots.size());
  for (auto& [r, sd] : stores) {
    out_slots.push_back(sd.first);
    l.b.store(r, n_in + int(out_slots.size()) - 1, sd.second);
  }
  if (gr.reduce >= 0) {
    out_slots.push_back(slot_[size_t(gr.reduce)]);
    Reduce red = reduction_of(g_[gr.reduce], gr.iter);
    red.out = n_in + int(out_slots.size()) - 1;
    l.b.reduce(red, reduce_reg);
  }
  auto spec = std::make_shared<KernelSpec>();
  spec->name = prof::intern(kernel_name(gid));
  spec->body = l.b.finish();
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
  spec->body = opaque_body(n, in);
  return spec;
}

std::shared_ptr<Executable> Lowering::run() {
  for (const Node& n : g_.nodes)
    if (n.shape.size() > 16)
      throw ShapeError(fmt::format("{} at {}: arrays of more than 16 axes are not supported", ir::op_name(n.op),
                                   ir::format_loc(n.loc)));
  stored_.assign(g_.size(), false);
  copy_group_.assign(g_.size(), -1);
  exe_.inputs = g_.params.size();
  {
    exec::Phase phase("pass fusion", prof::SpanKind::compile);
    int64_t t0 = prof::monotonic_ns();
    Grouping grouping = group_nodes(g_, fuse_);
    groups_ = std::move(grouping.groups);
    group_ = std::move(grouping.group_of);
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
  if (stats) stats->fusion_ns = l.fusion_ns();
  return exe;
}

}  // namespace loupe::rt::compile
