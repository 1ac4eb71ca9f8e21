// Register programs for fused kernels: the instructions, loads and stores
// of a FusedKernel (exec/kernel_spec.h), with virtual registers allocated
// to as few physical ones as their lifetimes allow, and the iteration
// space collapsed to as few axes as its operands' strides allow.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "exec/kernel_spec.h"
#include "ir/graph.h"

namespace loupe::rt::compile {

using exec::Code;
using exec::FusedKernel;
using exec::Load;
using exec::Reduce;
using exec::RegClass;
using exec::View;

inline RegClass class_of(Dtype d) { return is_floating(d) ? RegClass::f : RegClass::i; }

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

  // finish(), step by step.
  struct Registers;  // the physical registers of each class (program_builder.cpp)
  std::vector<int> last_reads() const;
  std::vector<bool> hoist_invariants(std::vector<int>& last);
  void assign_registers(Registers& regs, const std::vector<bool>& hoist);

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

// An operand of an instruction: a register, or a constant to be used as an
// immediate where an instruction takes one.
struct Opnd {
  int reg = -1;
  bool is_const = false;
  double value = 0;
  bool invariant = false;  // a load of one broadcast element
};

// Emits the instructions of one elementwise node given its operands;
// returns the result's register.
int emit_node(ProgramBuilder& b, const ir::Node& n, const std::vector<Opnd>& opnds, const std::vector<Dtype>& in_dtypes,
              const Shape& iter);

}  // namespace loupe::rt::compile
