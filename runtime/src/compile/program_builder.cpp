#include "compile/program_builder.h"

#include <fmt/format.h>

#include <algorithm>

#include "loupe/rt/errors.h"

namespace loupe::rt::compile {

using ir::Node;
using ir::Op;
using namespace exec;

namespace {

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

}  // namespace

// Physical registers of each class for the virtual ones, a register reused
// once the value it holds has been read for the last time.
struct ProgramBuilder::Registers {
  const std::vector<RegClass>& classes;
  std::vector<int>& last;  // per virtual register: where it is read last; -2 once released
  std::vector<int> phys = std::vector<int>(classes.size(), -1);
  std::vector<int> free_f, free_i;
  int nf = 0, ni = 0;

  void alloc(int r) {
    auto& fl = classes[size_t(r)] == RegClass::f ? free_f : free_i;
    int& count = classes[size_t(r)] == RegClass::f ? nf : ni;
    if (!fl.empty()) {
      phys[size_t(r)] = fl.back();
      fl.pop_back();
    } else {
      phys[size_t(r)] = count++;
    }
  }
  void release(int r, int at) {
    if (r < 0 || last[size_t(r)] != at || phys[size_t(r)] < 0) return;
    (classes[size_t(r)] == RegClass::f ? free_f : free_i).push_back(phys[size_t(r)]);
    last[size_t(r)] = -2;  // released once
  }
};

// Liveness: loads are live from the start, stores and the reduction read
// at the end.
std::vector<int> ProgramBuilder::last_reads() const {
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
  return last;
}

// Loads of one broadcast element, and instructions computing only from
// such loads and constants, are the same in every tile: they run once
// before the tile loop, so their registers must never be reused. Marks the
// invariant loads, keeps every invariant register live past the end, and
// returns which instructions to hoist.
std::vector<bool> ProgramBuilder::hoist_invariants(std::vector<int>& last) {
  const int end = int(code_.size());
  std::vector<bool> invariant(classes_.size(), false);
  for (auto& [l, r] : loads_) {
    bool inv = true;
    for (int64_t st : l.view.strides) inv = inv && st == 0;
    l.invariant = inv;
    invariant[size_t(r)] = inv;
  }
  std::vector<bool> hoist(code_.size(), false);
  for (int i = 0; i < end; ++i) {
    const VInstr& v = code_[size_t(i)];
    if (v.code == Code::iota || v.code == Code::rand_bits || v.code == Code::rand_uniform ||
        v.code == Code::rand_normal)
      continue;  // these depend on the element's index
    bool inv = true;
    for (int r : {v.a, v.b, v.c}) inv = inv && (r < 0 || invariant[size_t(r)]);
    hoist[size_t(i)] = inv;
    invariant[size_t(v.dst)] = inv;
  }
  for (size_t r = 0; r < classes_.size(); ++r)
    if (invariant[r]) last[r] = end + 1;
  return hoist;
}

// The loads and the instructions (hoisted or not) with physical registers.
void ProgramBuilder::assign_registers(Registers& regs, const std::vector<bool>& hoist) {
  const int end = int(code_.size());
  std::vector<int>& phys = regs.phys;
  for (auto& [l, r] : loads_) {
    regs.alloc(r);
    l.dst = int16_t(phys[size_t(r)]);
    k_.loads.push_back(l);
  }
  // Hoisted results get registers of their own before anything else.
  for (int i = 0; i < end; ++i)
    if (hoist[size_t(i)]) regs.alloc(code_[size_t(i)].dst);
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
    regs.release(v.a, i);
    regs.release(v.b, i);
    regs.release(v.c, i);
    if (phys[size_t(v.dst)] < 0) regs.alloc(v.dst);
    in.dst = int16_t(phys[size_t(v.dst)]);
    (hoist[size_t(i)] ? k_.hoisted : k_.code).push_back(in);
    if (regs.last[size_t(v.dst)] < 0 && regs.last[size_t(v.dst)] != -2) regs.release(v.dst, -1);  // dead result
  }
}

FusedKernel ProgramBuilder::finish() {
  std::vector<int> last = last_reads();
  std::vector<bool> hoist = hoist_invariants(last);
  Registers regs{classes_, last};
  assign_registers(regs, hoist);
  for (const VStore& s : stores_)
    k_.stores.push_back({classes_[size_t(s.src)], int16_t(regs.phys[size_t(s.src)]), s.out, s.dtype});
  if (reduce_) {
    reduce_->cls = classes_[size_t(reduce_src_)];
    reduce_->src = int16_t(regs.phys[size_t(reduce_src_)]);
    k_.reduce = reduce_;
  }
  k_.f_regs = regs.nf;
  k_.i_regs = regs.ni;
  collapse(k_);
  return std::move(k_);
}

namespace {

// Emits the instructions of one elementwise node: its operands' registers
// (a constant operand as a constant register, or as the immediate of an
// instruction that takes one), then its result in the node's precision.
struct NodeEmitter {
  ProgramBuilder& b;
  const Node& n;
  const std::vector<Opnd>& opnds;
  const std::vector<Dtype>& in_dtypes;
  const Shape& iter;
  const Dtype t = n.dtype;
  const bool f = is_floating(t);
  // A float binary op with one constant operand takes it as an immediate:
  // `imm` for (x op c), `rimm` for (c op x); kNone when it has no such form.
  static constexpr Code kNone = Code::const_f;

  int reg(size_t i) {
    const Opnd& o = opnds[i];
    return o.is_const ? b.constant(class_of(in_dtypes[i]), o.value) : o.reg;
  }
  int fix(int r) {
    // Round to the node's storage precision, as an unfused kernel would
    // when it stores the result.
    if (t == Dtype::f16) return b.op(Code::round_f16, RegClass::f, r);
    if (t == Dtype::bf16) return b.op(Code::round_bf16, RegClass::f, r);
    if (t == Dtype::i32) return b.op(Code::wrap_i32, RegClass::i, r);
    return r;
  }
  int un(Code fc, Code ic) { return fix(b.op(f ? fc : ic, f ? RegClass::f : RegClass::i, reg(0))); }
  int bin(Code fc, Code ic, Code imm = kNone, Code rimm = kNone) {
    if (f && opnds[1].is_const && !opnds[0].is_const && imm != kNone)
      return fix(b.op_imm(imm, RegClass::f, reg(0), -1, opnds[1].value));
    if (f && opnds[0].is_const && !opnds[1].is_const && rimm != kNone)
      return fix(b.op_imm(rimm, RegClass::f, reg(1), -1, opnds[0].value));
    return fix(b.op(f ? fc : ic, f ? RegClass::f : RegClass::i, reg(0), reg(1)));
  }
  int cmp(Code fc, Code ic, Code imm, Code rimm) {
    bool fin = is_floating(in_dtypes[0]);
    if (fin && opnds[1].is_const && !opnds[0].is_const) return b.op_imm(imm, RegClass::i, reg(0), -1, opnds[1].value);
    if (fin && opnds[0].is_const && !opnds[1].is_const) return b.op_imm(rimm, RegClass::i, reg(1), -1, opnds[0].value);
    return b.op(fin ? fc : ic, RegClass::i, reg(0), reg(1));
  }

  int generator();
  int unary();
  int cast();
  int arithmetic();
  int comparison();
  int where();
  int emit();
};

[[noreturn]] void not_elementwise(const Node& n) {
  throw RuntimeError(fmt::format("internal error: {} is not elementwise", ir::op_name(n.op)));
}

int NodeEmitter::generator() {
  switch (n.op) {
    LOUPE_OPS_BUT_GENERATOR(LOUPE_OP_CASE)
    break;  // another group
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
  }
  not_elementwise(n);
}

int NodeEmitter::unary() {
  switch (n.op) {
    LOUPE_OPS_BUT_UNARY(LOUPE_OP_CASE)
    break;  // another group
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
    case Op::cast: return cast();
  }
  not_elementwise(n);
}

int NodeEmitter::cast() {
  Dtype from = in_dtypes[0];
  int a = reg(0);
  if (is_floating(from) && f) return fix(a);
  if (is_floating(from))
    return t == Dtype::boolean ? b.op(Code::f_to_bool, RegClass::i, a) : fix(b.op(Code::f_to_i, RegClass::i, a));
  if (f) return fix(b.op(Code::i_to_f, RegClass::f, a));
  if (t == Dtype::boolean) return b.op(Code::to_bool, RegClass::i, a);
  return fix(a);
}

int NodeEmitter::arithmetic() {
  switch (n.op) {
    LOUPE_OPS_BUT_ARITHMETIC(LOUPE_OP_CASE)
    break;  // another group
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
  }
  not_elementwise(n);
}

int NodeEmitter::comparison() {
  switch (n.op) {
    LOUPE_OPS_BUT_COMPARISON(LOUPE_OP_CASE)
    break;  // another group
    case Op::eq: return cmp(Code::eq, Code::ieq, Code::eq_imm, Code::eq_imm);
    case Op::ne: return cmp(Code::ne, Code::ine, Code::ne_imm, Code::ne_imm);
    case Op::lt: return cmp(Code::lt, Code::ilt, Code::lt_imm, Code::gt_imm);
    case Op::le: return cmp(Code::le, Code::ile, Code::le_imm, Code::ge_imm);
    case Op::gt: return cmp(Code::gt, Code::igt, Code::gt_imm, Code::lt_imm);
    case Op::ge: return cmp(Code::ge, Code::ige, Code::ge_imm, Code::le_imm);
  }
  not_elementwise(n);
}

int NodeEmitter::where() {
  if (f && opnds[2].is_const && !opnds[1].is_const)
    return b.op_imm(Code::where_f_imm_b, RegClass::f, reg(0), reg(1), opnds[2].value);
  if (f && opnds[1].is_const && !opnds[2].is_const)
    return b.op_imm(Code::where_f_imm_a, RegClass::f, reg(0), reg(2), opnds[1].value);
  return b.op(f ? Code::where_f : Code::where_i, f ? RegClass::f : RegClass::i, reg(0), reg(1), reg(2));
}

int NodeEmitter::emit() {
  switch (n.op) {
    LOUPE_SOURCE_OPS(LOUPE_OP_CASE)
    LOUPE_REDUCTION_OPS(LOUPE_OP_CASE)
    LOUPE_VIEW_OPS(LOUPE_OP_CASE)
    LOUPE_OPAQUE_OPS(LOUPE_OP_CASE)
    break;
    LOUPE_GENERATOR_OPS(LOUPE_OP_CASE) return generator();
    LOUPE_UNARY_OPS(LOUPE_OP_CASE) return unary();
    LOUPE_ARITHMETIC_OPS(LOUPE_OP_CASE) return arithmetic();
    LOUPE_COMPARISON_OPS(LOUPE_OP_CASE) return comparison();
    case Op::logical_and: return b.op(Code::iand, RegClass::i, reg(0), reg(1));
    case Op::logical_or: return b.op(Code::ior, RegClass::i, reg(0), reg(1));
    case Op::where: return where();
  }
  not_elementwise(n);
}

}  // namespace

int emit_node(ProgramBuilder& b, const Node& n, const std::vector<Opnd>& opnds, const std::vector<Dtype>& in_dtypes,
              const Shape& iter) {
  return NodeEmitter{b, n, opnds, in_dtypes, iter}.emit();
}

}  // namespace loupe::rt::compile
