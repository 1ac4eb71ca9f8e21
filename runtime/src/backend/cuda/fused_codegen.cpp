// CUDA C++ for fused kernels, generated from the register program the CPU
// device interprets (exec::FusedKernel): each element of the iteration
// space becomes one thread's turn of a grid-stride loop, the registers
// become local variables, and the program's instructions become
// statements, so that both devices compute the same thing in the same
// order for each element.
//
// A kernel with a reduction runs one of two ways. When the innermost axis
// is reduced (a softmax's row sum), or when there are too few outputs to
// fill the GPU with one thread each, a block reduces one output at a time:
// its threads stride along the reduced elements and combine in shared
// memory. Otherwise (a bias gradient over a large batch) each thread
// reduces one output on its own, so that neighbouring threads read
// neighbouring elements. Float sums accumulate in double, as on the CPU
// device.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "backend/cuda/kernel_plan.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::backend::cuda {

using namespace exec;

namespace {

// Outputs below this many, a reduction gives each output a block.
constexpr int64_t kColumnReduceMinOutputs = 32768;
constexpr uint32_t kBlock = 256;

std::string f(int r) { return fmt::format("f{}", r); }
std::string i(int r) { return fmt::format("i{}", r); }

std::string load_expr(Dtype dtype, int arg, const std::string& off) {
  switch (dtype) {
    case Dtype::f32: return fmt::format("((const float*)p{})[{}]", arg, off);
    case Dtype::f16: return fmt::format("lp_h2f(((const unsigned short*)p{})[{}])", arg, off);
    case Dtype::bf16: return fmt::format("lp_bf2f(((const unsigned short*)p{})[{}])", arg, off);
    case Dtype::i32: return fmt::format("(i64)((const int*)p{})[{}]", arg, off);
    case Dtype::i64: return fmt::format("((const i64*)p{})[{}]", arg, off);
    case Dtype::boolean: return fmt::format("(i64)(((const unsigned char*)p{})[{}] != 0)", arg, off);
  }
  return "0";
}

std::string store_stmt(Dtype dtype, int out, const std::string& index, const std::string& value) {
  switch (dtype) {
    case Dtype::f32: return fmt::format("((float*)p{})[{}] = {};", out, index, value);
    case Dtype::f16: return fmt::format("((unsigned short*)p{})[{}] = lp_f2h({});", out, index, value);
    case Dtype::bf16: return fmt::format("((unsigned short*)p{})[{}] = lp_f2bf({});", out, index, value);
    case Dtype::i32: return fmt::format("((int*)p{})[{}] = (int)(unsigned)(u64){};", out, index, value);
    case Dtype::i64: return fmt::format("((i64*)p{})[{}] = {};", out, index, value);
    case Dtype::boolean: return fmt::format("((unsigned char*)p{})[{}] = (unsigned char)({} != 0);", out, index, value);
  }
  return "";
}

[[noreturn]] void no_code(Code code) {
  throw RuntimeError(fmt::format("internal error: no CUDA code for instruction {}", int(code)));
}

// An instruction's operands by name: a, b and c in either class, as
// instr_stmt() names them before knowing their classes.
struct Operands {
  std::string fa, fb, fc, ia, ib, ic;
  std::string v;  // the immediate, as a float literal
};

// The value of each group's instructions (kernel_spec.h), as an expression.
std::string float_value(Code code, const Operands& o) {
  const auto& [fa, fb, fc, ia, ib, ic, v] = o;
  switch (code) {
    LOUPE_CODES_BUT_FLOAT(LOUPE_CODE_CASE)
    break;  // another group
    case Code::neg: return "-" + fa;
    case Code::exp: return fmt::format("expf({})", fa);
    case Code::log: return fmt::format("logf({})", fa);
    case Code::tanh: return fmt::format("tanhf({})", fa);
    case Code::sqrt: return fmt::format("sqrtf({})", fa);
    case Code::rsqrt: return fmt::format("1.0f / sqrtf({})", fa);
    case Code::relu: return fmt::format("{0} > 0.0f ? {0} : 0.0f", fa);
    case Code::gelu: return fmt::format("lp_gelu({})", fa);
    case Code::sigmoid: return fmt::format("1.0f / (1.0f + expf(-{}))", fa);
    case Code::abs: return fmt::format("fabsf({})", fa);
    case Code::round_f16: return fmt::format("lp_h2f(lp_f2h({}))", fa);
    case Code::round_bf16: return fmt::format("lp_bf2f(lp_f2bf({}))", fa);
    case Code::rcp: return fmt::format("1.0f / {}", fa);
    case Code::add: return fmt::format("{} + {}", fa, fb);
    case Code::sub: return fmt::format("{} - {}", fa, fb);
    case Code::mul: return fmt::format("{} * {}", fa, fb);
    case Code::div: return fmt::format("{} / {}", fa, fb);
    case Code::pow: return fmt::format("powf({}, {})", fa, fb);
    case Code::max: return fmt::format("lp_max({}, {})", fa, fb);
    case Code::min: return fmt::format("lp_min({}, {})", fa, fb);
    case Code::eq: return fmt::format("(i64)({} == {})", fa, fb);
    case Code::ne: return fmt::format("(i64)({} != {})", fa, fb);
    case Code::lt: return fmt::format("(i64)({} < {})", fa, fb);
    case Code::le: return fmt::format("(i64)({} <= {})", fa, fb);
    case Code::gt: return fmt::format("(i64)({} > {})", fa, fb);
    case Code::ge: return fmt::format("(i64)({} >= {})", fa, fb);
  }
  no_code(code);
}

std::string immediate_value(Code code, const Operands& o) {
  const auto& [fa, fb, fc, ia, ib, ic, v] = o;
  switch (code) {
    LOUPE_CODES_BUT_IMMEDIATE(LOUPE_CODE_CASE)
    break;  // another group
    case Code::add_imm: return fmt::format("{} + {}", fa, v);
    case Code::mul_imm: return fmt::format("{} * {}", fa, v);
    case Code::sub_imm: return fmt::format("{} - {}", fa, v);
    case Code::rsub_imm: return fmt::format("{} - {}", v, fa);
    case Code::div_imm: return fmt::format("{} / {}", fa, v);
    case Code::rdiv_imm: return fmt::format("{} / {}", v, fa);
    case Code::max_imm: return fmt::format("lp_max({}, {})", fa, v);
    case Code::min_imm: return fmt::format("lp_min({}, {})", fa, v);
    case Code::eq_imm: return fmt::format("(i64)({} == {})", fa, v);
    case Code::ne_imm: return fmt::format("(i64)({} != {})", fa, v);
    case Code::lt_imm: return fmt::format("(i64)({} < {})", fa, v);
    case Code::le_imm: return fmt::format("(i64)({} <= {})", fa, v);
    case Code::gt_imm: return fmt::format("(i64)({} > {})", fa, v);
    case Code::ge_imm: return fmt::format("(i64)({} >= {})", fa, v);
    case Code::where_f_imm_b: return fmt::format("{} ? {} : {}", ia, fb, v);
    case Code::where_f_imm_a: return fmt::format("{} ? {} : {}", ia, v, fb);
  }
  no_code(code);
}

std::string int_value(Code code, const Operands& o) {
  const auto& [fa, fb, fc, ia, ib, ic, v] = o;
  switch (code) {
    LOUPE_CODES_BUT_INT(LOUPE_CODE_CASE)
    break;  // another group
    case Code::ineg: return fmt::format("(i64)(0ull - (u64){})", ia);
    case Code::iabs: return fmt::format("{0} < 0 ? (i64)(0ull - (u64){0}) : {0}", ia);
    case Code::irelu: return fmt::format("{0} > 0 ? {0} : 0", ia);
    case Code::inot: return fmt::format("(i64)({} == 0)", ia);
    case Code::wrap_i32: return fmt::format("(i64)(int)(unsigned)(u64){}", ia);
    case Code::to_bool: return fmt::format("(i64)({} != 0)", ia);
    case Code::iadd: return fmt::format("(i64)((u64){} + (u64){})", ia, ib);
    case Code::isub: return fmt::format("(i64)((u64){} - (u64){})", ia, ib);
    case Code::imul: return fmt::format("(i64)((u64){} * (u64){})", ia, ib);
    case Code::idiv: return fmt::format("lp_idiv({}, {})", ia, ib);
    case Code::imax: return fmt::format("{0} > {1} ? {0} : {1}", ia, ib);
    case Code::imin: return fmt::format("{0} < {1} ? {0} : {1}", ia, ib);
    case Code::iand: return fmt::format("(i64)({} != 0 && {} != 0)", ia, ib);
    case Code::ior: return fmt::format("(i64)({} != 0 || {} != 0)", ia, ib);
    case Code::ieq: return fmt::format("(i64)({} == {})", ia, ib);
    case Code::ine: return fmt::format("(i64)({} != {})", ia, ib);
    case Code::ilt: return fmt::format("(i64)({} < {})", ia, ib);
    case Code::ile: return fmt::format("(i64)({} <= {})", ia, ib);
    case Code::igt: return fmt::format("(i64)({} > {})", ia, ib);
    case Code::ige: return fmt::format("(i64)({} >= {})", ia, ib);
  }
  no_code(code);
}

std::string select_value(Code code, const Operands& o) {
  const auto& [fa, fb, fc, ia, ib, ic, v] = o;
  switch (code) {
    LOUPE_CODES_BUT_SELECT(LOUPE_CODE_CASE)
    break;  // another group
    case Code::where_f: return fmt::format("{} ? {} : {}", ia, fb, fc);
    case Code::where_i: return fmt::format("{} ? {} : {}", ia, ib, ic);
  }
  no_code(code);
}

std::string conversion_value(Code code, const Operands& o) {
  const auto& [fa, fb, fc, ia, ib, ic, v] = o;
  switch (code) {
    LOUPE_CODES_BUT_CONVERSION(LOUPE_CODE_CASE)
    break;  // another group
    case Code::f_to_i: return fmt::format("lp_f2i({})", fa);
    case Code::f_to_bool: return fmt::format("(i64)({} != 0.0f)", fa);
    case Code::i_to_f: return fmt::format("(float){}", ia);
  }
  no_code(code);
}

std::string source_value(const Instr& in, const char* lin, const Operands& o) {
  const auto& [fa, fb, fc, ia, ib, ic, v] = o;
  switch (in.code) {
    LOUPE_CODES_BUT_SOURCE(LOUPE_CODE_CASE)
    break;  // another group
    case Code::const_f: return v;
    case Code::const_i: return int_literal(int64_t(in.imm));
    case Code::iota: return fmt::format("(((i64){}) / {}) % {}", lin, int_literal(in.div), int_literal(in.mod));
    case Code::rand_bits: return fmt::format("(i64)lp_random_bits((u64){}, (u64){})", ia, lin);
    case Code::rand_uniform: return fmt::format("lp_rand_uniform((u64){}, (u64){})", ia, lin);
    case Code::rand_normal: return fmt::format("lp_rand_normal((u64){}, (u64){})", ia, lin);
  }
  no_code(in.code);
}

std::string instr_value(const Instr& in, const char* lin, const Operands& o) {
  switch (in.code) {
    LOUPE_FLOAT_CODES(LOUPE_CODE_CASE) return float_value(in.code, o);
    LOUPE_IMMEDIATE_CODES(LOUPE_CODE_CASE) return immediate_value(in.code, o);
    LOUPE_INT_CODES(LOUPE_CODE_CASE) return int_value(in.code, o);
    LOUPE_SELECT_CODES(LOUPE_CODE_CASE) return select_value(in.code, o);
    LOUPE_CONVERSION_CODES(LOUPE_CODE_CASE) return conversion_value(in.code, o);
    LOUPE_SOURCE_CODES(LOUPE_CODE_CASE) return source_value(in, lin, o);
  }
  no_code(in.code);
}

// One instruction as a statement, assigning its value to its result's
// register (of the class kernel_spec.h gives it); `lin` names the element's
// linear index.
std::string instr_stmt(const Instr& in, const char* lin) {
  const Operands o{.fa = f(in.a),
                   .fb = f(in.b),
                   .fc = f(in.c),
                   .ia = i(in.a),
                   .ib = i(in.b),
                   .ic = i(in.c),
                   .v = float_literal(in.imm)};
  const std::string dst = result_class(in.code) == RegClass::f ? f(in.dst) : i(in.dst);
  return fmt::format("{} = {};", dst, instr_value(in, lin, o));
}

class FusedSource {
 public:
  explicit FusedSource(const FusedKernel& k) : k_(k), nd_(int(k.iter.size())) {
    cs_ = contiguous_strides(k.iter);
    total_ = numel(k.iter);
    buffers_ = 0;
    for (const Load& l : k.loads) buffers_ = std::max(buffers_, l.arg + 1);
    for (const Store& s : k.stores) buffers_ = std::max(buffers_, s.out + 1);
    if (k.reduce) buffers_ = std::max(buffers_, k.reduce->out + 1);
    wide_ = needs_64bit();
  }

  KernelPlan plan() {
    KernelPlan p;
    p.buffers = buffers_;
    PlanStep s;
    s.entry = "loupe_fused";
    for (int b = 0; b < buffers_; ++b) s.args.push_back(b);
    std::string body;
    if (!k_.reduce) {
      body = elementwise();
      s.block = kBlock;
      s.blocks = std::max<int64_t>(1, (total_ + kBlock - 1) / kBlock);
    } else {
      const Reduce& r = *k_.reduce;
      int64_t len = r.out_size > 0 ? total_ / r.out_size : 0;
      bool inner_reduced = r.out_strides.back() == 0;
      if (!inner_reduced && r.out_size >= kColumnReduceMinOutputs) {
        body = column_reduce(len);
        s.block = kBlock;
        s.blocks = std::max<int64_t>(1, (r.out_size + kBlock - 1) / kBlock);
      } else {
        uint32_t block = 32;
        while (block < kBlock && int64_t(block) < len) block *= 2;
        body = row_reduce(len, block);
        s.block = block;
        s.blocks = std::max<int64_t>(1, r.out_size);
      }
    }
    p.source = prelude() + "\n" + body;
    p.steps.push_back(std::move(s));
    return p;
  }

 private:
  // Whether an index may pass 2^31: then indices are 64-bit.
  bool needs_64bit() const {
    const int64_t limit = (int64_t(1) << 31) - (int64_t(1) << 26);  // room for a grid-stride step
    if (total_ >= limit) return true;
    for (const Load& l : k_.loads) {
      int64_t hi = l.view.offset;
      for (int d = 0; d < nd_; ++d) hi += (k_.iter[size_t(d)] - 1) * std::max<int64_t>(l.view.strides[size_t(d)], 0);
      if (hi >= limit) return true;
    }
    return false;
  }

  std::string signature(uint32_t block) const {
    std::string params;
    for (int b = 0; b < buffers_; ++b) params += fmt::format("{}void* __restrict__ p{}", b ? ", " : "", b);
    return fmt::format("extern \"C\" __global__ void __launch_bounds__({}) loupe_fused({})", block, params);
  }

  // Register declarations, then what is the same for every element: loads
  // of one broadcast element, and the instructions hoisted out of the loop.
  void preamble(std::string& o) const {
    o += fmt::format("  typedef {} idx_t;\n", wide_ ? "long long" : "int");
    if (k_.f_regs > 0) {
      o += "  float";
      for (int r = 0; r < k_.f_regs; ++r) o += fmt::format("{} f{} = 0.0f", r ? "," : "", r);
      o += ";\n";
    }
    if (k_.i_regs > 0) {
      o += "  i64";
      for (int r = 0; r < k_.i_regs; ++r) o += fmt::format("{} i{} = 0", r ? "," : "", r);
      o += ";\n";
    }
    for (const Load& l : k_.loads) {
      if (!l.invariant) continue;
      o += fmt::format("  {} = {};\n", l.cls == RegClass::f ? f(l.dst) : i(l.dst),
                       load_expr(l.dtype, l.arg, fmt::format("{}", l.view.offset)));
    }
    for (const Instr& in : k_.hoisted) o += "  " + instr_stmt(in, "0") + "\n";
  }

  bool contiguous(const Load& l) const {
    for (int d = 0; d < nd_; ++d)
      if (k_.iter[size_t(d)] != 1 && l.view.strides[size_t(d)] != cs_[size_t(d)]) return false;
    return true;
  }

  // Loads, instructions and stores for the element at multi-index x0..,
  // linear index `lin`.
  void element(std::string& o, const std::string& ind) const {
    for (const Load& l : k_.loads) {
      if (l.invariant) continue;
      std::string off;
      if (contiguous(l)) {
        off = l.view.offset ? fmt::format("lin + {}", l.view.offset) : "lin";
      } else {
        off = fmt::format("{}", l.view.offset);
        for (int d = 0; d < nd_; ++d) {
          int64_t st = l.view.strides[size_t(d)];
          if (st == 0 || k_.iter[size_t(d)] == 1) continue;
          off += st == 1 ? fmt::format(" + x{}", d) : fmt::format(" + x{} * {}", d, st);
        }
      }
      o += fmt::format("{}{} = {};\n", ind, l.cls == RegClass::f ? f(l.dst) : i(l.dst), load_expr(l.dtype, l.arg, off));
    }
    for (const Instr& in : k_.code) o += ind + instr_stmt(in, "lin") + "\n";
    for (const Store& s : k_.stores)
      o += ind + store_stmt(s.dtype, s.out, "lin", s.cls == RegClass::f ? f(s.src) : i(s.src)) + "\n";
  }

  // Whether some load walks axis d other than contiguously.
  bool axis_needed(int d) const {
    for (const Load& l : k_.loads)
      if (!l.invariant && !contiguous(l) && l.view.strides[size_t(d)] != 0) return true;
    return false;
  }

  // x_d for `axes` (in order, the last fastest) from the flat index `from`.
  void decompose(std::string& o, const std::string& ind, const std::vector<int>& axes, const std::string& from,
                 bool all) const {
    if (axes.empty()) return;
    o += fmt::format("{}idx_t t_ = {};\n", ind, from);
    for (size_t j = axes.size(); j-- > 0;) {
      int d = axes[j];
      bool need = all || axis_needed(d);
      if (j == 0) {
        if (need) o += fmt::format("{}const idx_t x{} = t_;\n", ind, d);
      } else {
        if (need) o += fmt::format("{}const idx_t x{} = t_ % {};\n", ind, d, k_.iter[size_t(d)]);
        o += fmt::format("{}t_ /= {};\n", ind, k_.iter[size_t(d)]);
      }
    }
  }

  std::string elementwise() const {
    std::string o = signature(kBlock) + " {\n";
    preamble(o);
    o += fmt::format("  const idx_t total = {};\n", total_);
    o += "  for (idx_t lin = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; lin < total; lin += (idx_t)gridDim.x * "
         "blockDim.x) {\n";
    std::vector<int> axes(static_cast<size_t>(nd_));
    std::iota(axes.begin(), axes.end(), 0);
    bool any = false;
    for (int d = 0; d < nd_; ++d) any |= axis_needed(d);
    if (any) {
      o += "    {\n";
      decompose(o, "      ", axes, "lin", false);
      element(o, "      ");
      o += "    }\n";
    } else {
      element(o, "    ");
    }
    o += "  }\n}\n";
    return o;
  }

  // ---- reductions

  struct Acc {
    std::string type, init;
  };
  Acc acc() const {
    const Reduce& r = *k_.reduce;
    if (r.kind == ReduceKind::argmax) return {"double", "-__longlong_as_double(0x7ff0000000000000ll)"};
    if (r.cls == RegClass::f) {
      switch (r.kind) {
        case ReduceKind::sum: return {"double", "0.0"};
        case ReduceKind::max: return {"float", float_literal(-INFINITY)};
        case ReduceKind::min:
        case ReduceKind::argmax: break;  // argmax returned above
      }
      return {"float", float_literal(INFINITY)};  // min
    }
    switch (r.kind) {
      case ReduceKind::sum: return {"i64", "0"};
      case ReduceKind::max: return {"i64", int_literal(INT64_MIN)};
      case ReduceKind::min:
      case ReduceKind::argmax: break;  // argmax returned above
    }
    return {"i64", int_literal(INT64_MAX)};  // min
  }

  std::string reg_of_reduce() const {
    const Reduce& r = *k_.reduce;
    return r.cls == RegClass::f ? f(r.src) : i(r.src);
  }

  // acc = acc (+) the element's value.
  std::string accumulate() const {
    const Reduce& r = *k_.reduce;
    std::string v = reg_of_reduce();
    if (r.kind == ReduceKind::argmax)
      return fmt::format("{{ double v_ = (double){}; if (v_ > acc || arg < 0) {{ acc = v_; arg = x{}; }} }}", v,
                         r.axis);
    if (r.cls == RegClass::f) {
      switch (r.kind) {
        case ReduceKind::sum: return fmt::format("acc += (double){};", v);
        case ReduceKind::max: return fmt::format("acc = lp_max({}, acc);", v);
        case ReduceKind::min:
        case ReduceKind::argmax: break;  // argmax returned above
      }
      return fmt::format("acc = lp_min({}, acc);", v);  // min
    }
    switch (r.kind) {
      case ReduceKind::sum: return fmt::format("acc = (i64)((u64)acc + (u64){});", v);
      case ReduceKind::max: return fmt::format("acc = {0} > acc ? {0} : acc;", v);
      case ReduceKind::min:
      case ReduceKind::argmax: break;  // argmax returned above
    }
    return fmt::format("acc = {0} < acc ? {0} : acc;", v);  // min
  }

  // a = a (+) b, for combining partial results in shared memory.
  std::string combine(const std::string& a, const std::string& b, const std::string& aa, const std::string& ba) const {
    const Reduce& r = *k_.reduce;
    if (r.kind == ReduceKind::argmax)
      return fmt::format(
          "if ({3} >= 0 && ({2} < 0 || {1} > {0} || ({1} == {0} && {3} < {2}))) {{ {0} = {1}; {2} = {3}; }}", a, b, aa,
          ba);
    if (r.cls == RegClass::f) {
      switch (r.kind) {
        case ReduceKind::sum: return fmt::format("{} += {};", a, b);
        case ReduceKind::max: return fmt::format("{0} = lp_max({0}, {1});", a, b);
        case ReduceKind::min:
        case ReduceKind::argmax: break;  // argmax returned above
      }
      return fmt::format("{0} = lp_min({0}, {1});", a, b);  // min
    }
    switch (r.kind) {
      case ReduceKind::sum: return fmt::format("{0} = (i64)((u64){0} + (u64){1});", a, b);
      case ReduceKind::max: return fmt::format("{0} = {1} > {0} ? {1} : {0};", a, b);
      case ReduceKind::min:
      case ReduceKind::argmax: break;  // argmax returned above
    }
    return fmt::format("{0} = {1} < {0} ? {1} : {0};", a, b);  // min
  }

  std::string write_result(const std::string& value, const std::string& arg) const {
    const Reduce& r = *k_.reduce;
    if (r.kind == ReduceKind::argmax) return fmt::format("((int*)p{0})[o] = (int)({1} > 0 ? {1} : 0);", r.out, arg);
    if (r.cls == RegClass::f) return store_stmt(r.dtype, r.out, "o", fmt::format("(float){}", value));
    return store_stmt(r.dtype, r.out, "o", value);
  }

  void axes_split(std::vector<int>& kept, std::vector<int>& reduced) const {
    for (int d = 0; d < nd_; ++d) (k_.reduce->out_strides[size_t(d)] == 0 ? reduced : kept).push_back(d);
  }

  std::string linear_index() const {
    std::string e;
    for (int d = 0; d < nd_; ++d) {
      if (k_.iter[size_t(d)] == 1) continue;
      e += fmt::format("{}x{}{}", e.empty() ? "" : " + ", d,
                       cs_[size_t(d)] == 1 ? "" : fmt::format(" * {}", cs_[size_t(d)]));
    }
    return e.empty() ? "0" : e;
  }

  // x_d of every axis are needed to form the linear index.
  void decompose_all(std::string& o, const std::string& ind, const std::vector<int>& axes,
                     const std::string& from) const {
    if (axes.empty()) return;
    o += fmt::format("{}{{\n", ind);
    o += fmt::format("{}  idx_t t_ = {};\n", ind, from);
    for (size_t j = axes.size(); j-- > 0;) {
      int d = axes[j];
      if (j == 0) {
        o += fmt::format("{}  x{} = t_;\n", ind, d);
      } else {
        o += fmt::format("{}  x{} = t_ % {};\n", ind, d, k_.iter[size_t(d)]);
        o += fmt::format("{}  t_ /= {};\n", ind, k_.iter[size_t(d)]);
      }
    }
    o += fmt::format("{}}}\n", ind);
  }

  void declare_axes(std::string& o, const std::string& ind) const {
    o += ind + "idx_t";
    for (int d = 0; d < nd_; ++d) o += fmt::format("{} x{} = 0", d ? "," : "", d);
    o += ";\n";
  }

  // From the preamble on: the loop over outputs (`out_loop`, over o), and in
  // it each output's accumulation of its elements (`reduce_loop`, over r)
  // into acc (and arg, for argmax). Leaves the loop over outputs open.
  void accumulate_outputs(std::string& o, int64_t len, const char* out_loop, const char* reduce_loop) const {
    const Reduce& r = *k_.reduce;
    const Acc a = acc();
    std::vector<int> kept, reduced;
    axes_split(kept, reduced);
    preamble(o);
    o += fmt::format("  const idx_t outs = {}, len = {};\n", r.out_size, len);
    declare_axes(o, "  ");
    o += out_loop;
    decompose_all(o, "    ", kept, "o");
    o += fmt::format("    {} acc = {};\n", a.type, a.init);
    if (r.kind == ReduceKind::argmax) o += "    long long arg = -1;\n";
    o += reduce_loop;
    decompose_all(o, "      ", reduced, "r");
    o += fmt::format("      const idx_t lin = {};\n", linear_index());
    element(o, "      ");
    o += "      " + accumulate() + "\n";
    o += "    }\n";
  }

  std::string row_reduce(int64_t len, uint32_t block) const {
    const bool arg = k_.reduce->kind == ReduceKind::argmax;
    std::string o = signature(block) + " {\n";
    o += fmt::format("  __shared__ {} red_[{}];\n", acc().type, block);
    if (arg) o += fmt::format("  __shared__ long long red_arg_[{}];\n", block);
    accumulate_outputs(o, len, "  for (idx_t o = blockIdx.x; o < outs; o += gridDim.x) {\n",
                       "    for (idx_t r = threadIdx.x; r < len; r += blockDim.x) {\n");
    o += "    red_[threadIdx.x] = acc;\n";
    if (arg) o += "    red_arg_[threadIdx.x] = arg;\n";
    o += "    __syncthreads();\n";
    o += "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n";
    o += "      if (threadIdx.x < s) {\n";
    o += "        " +
         combine("red_[threadIdx.x]", "red_[threadIdx.x + s]", "red_arg_[threadIdx.x]", "red_arg_[threadIdx.x + s]") +
         "\n";
    o += "      }\n";
    o += "      __syncthreads();\n";
    o += "    }\n";
    o += "    if (threadIdx.x == 0) " + write_result("red_[0]", "red_arg_[0]") + "\n";
    o += "    __syncthreads();\n";
    o += "  }\n}\n";
    return o;
  }

  std::string column_reduce(int64_t len) const {
    std::string o = signature(kBlock) + " {\n";
    accumulate_outputs(
        o, len,
        "  for (idx_t o = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; o < outs; o += (idx_t)gridDim.x * "
        "blockDim.x) {\n",
        "    for (idx_t r = 0; r < len; ++r) {\n");
    o += "    " + write_result("acc", "arg") + "\n";
    o += "  }\n}\n";
    return o;
  }

  const FusedKernel& k_;
  int nd_;
  std::vector<int64_t> cs_;
  int64_t total_ = 0;
  int buffers_ = 0;
  bool wide_ = false;
};

}  // namespace

KernelPlan plan_fused(const FusedKernel& k) { return FusedSource(k).plan(); }

}  // namespace loupe::rt::backend::cuda
