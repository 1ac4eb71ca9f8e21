// The fused-kernel interpreter. It runs a FusedKernel's register program
// over the iteration space in tiles of kTile elements: each instruction is
// a tight loop over a tile that the compiler vectorises, so the cost of
// interpreting is paid once per tile rather than once per element.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/fast_math.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd.h"

namespace loupe::rt::backend::cpu {

using namespace exec;

namespace {

constexpr int kTile = 512;
constexpr int kMaxDims = 16;

struct Scratch {
  std::vector<float> f;
  std::vector<int64_t> i;
  std::vector<double> acc_f;
  std::vector<int64_t> acc_i;
  std::vector<int64_t> arg;
};
thread_local Scratch t_scratch;

// Visits the tile [start, start + n) of the iteration space as runs along
// the last axis: fn(pos in tile, run length, element offset of the run's
// first element under `strides`, multi-index of that element).
template <typename Fn>
inline void walk(const Shape& iter, const int64_t* start_idx, const std::vector<int64_t>& strides, int64_t offset,
                 int n, Fn&& fn) {
  const int nd = int(iter.size());
  int64_t idx[kMaxDims];
  std::copy(start_idx, start_idx + nd, idx);
  const int64_t last = iter[size_t(nd - 1)];
  int pos = 0;
  while (pos < n) {
    int seg = int(std::min<int64_t>(n - pos, last - idx[nd - 1]));
    int64_t off = offset;
    for (int d = 0; d < nd; ++d) off += idx[d] * strides[size_t(d)];
    fn(pos, seg, off, static_cast<const int64_t*>(idx));
    pos += seg;
    idx[nd - 1] += seg;
    for (int d = nd - 1; d > 0 && idx[d] >= iter[size_t(d)]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <typename S, typename D, typename Conv>
inline void strided_convert(const S* src, int64_t stride, int n, D* dst, Conv conv) {
  if (stride == 1) {
    for (int j = 0; j < n; ++j) dst[j] = conv(src[j]);
  } else if (stride == 0) {
    D v = conv(src[0]);
    for (int j = 0; j < n; ++j) dst[j] = v;
  } else {
    for (int j = 0; j < n; ++j) dst[j] = conv(src[j * stride]);
  }
}

void strided_convert_one(Dtype dtype, const void* base, int64_t off, float* f, int64_t* i) {
  switch (dtype) {
    case Dtype::f32: *f = static_cast<const float*>(base)[off]; break;
    case Dtype::f16: *f = half_to_float(static_cast<const uint16_t*>(base)[off]); break;
    case Dtype::bf16: *f = bfloat_to_float(static_cast<const uint16_t*>(base)[off]); break;
    case Dtype::i32: *i = static_cast<const int32_t*>(base)[off]; break;
    case Dtype::i64: *i = static_cast<const int64_t*>(base)[off]; break;
    case Dtype::boolean: *i = static_cast<const uint8_t*>(base)[off] != 0; break;
  }
}

// Loads one operand's tile into registers, converting to f32 or int64. A
// contiguous f32 run needs no copy: the register reads the buffer itself.
LOUPE_SIMD_CLONES void do_load(const Load& ld, const void* base, const Shape& iter, const int64_t* start_idx, int n,
                               float* f, int64_t* i, const float** f_read) {
  const int nd = int(iter.size());
  const int64_t s_last = ld.view.strides[size_t(nd - 1)];
  const int64_t last = iter[size_t(nd - 1)];
  int64_t idx[kMaxDims];
  std::copy(start_idx, start_idx + nd, idx);
  if (ld.dtype == Dtype::f32 && s_last == 1 && idx[nd - 1] + n <= last) {
    int64_t off = ld.view.offset;
    for (int d = 0; d < nd; ++d) off += idx[d] * ld.view.strides[size_t(d)];
    *f_read = static_cast<const float*>(base) + off;
    return;
  }
  *f_read = f;
  int pos = 0;
  while (pos < n) {
    int seg = int(std::min<int64_t>(n - pos, last - idx[nd - 1]));
    int64_t off = ld.view.offset;
    for (int d = 0; d < nd; ++d) off += idx[d] * ld.view.strides[size_t(d)];
    switch (ld.dtype) {
      case Dtype::f32:
        strided_convert(static_cast<const float*>(base) + off, s_last, seg, f + pos, [](float v) { return v; });
        break;
      case Dtype::f16:
        strided_convert(static_cast<const uint16_t*>(base) + off, s_last, seg, f + pos,
                        [](uint16_t v) { return half_to_float(v); });
        break;
      case Dtype::bf16:
        strided_convert(static_cast<const uint16_t*>(base) + off, s_last, seg, f + pos,
                        [](uint16_t v) { return bfloat_to_float(v); });
        break;
      case Dtype::i32:
        strided_convert(static_cast<const int32_t*>(base) + off, s_last, seg, i + pos,
                        [](int32_t v) { return int64_t(v); });
        break;
      case Dtype::i64:
        strided_convert(static_cast<const int64_t*>(base) + off, s_last, seg, i + pos, [](int64_t v) { return v; });
        break;
      case Dtype::boolean:
        strided_convert(static_cast<const uint8_t*>(base) + off, s_last, seg, i + pos,
                        [](uint8_t v) { return int64_t(v != 0); });
        break;
    }
    pos += seg;
    idx[nd - 1] += seg;
    for (int d = nd - 1; d > 0 && idx[d] >= iter[size_t(d)]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

LOUPE_SIMD_CLONES void do_store(const Store& st, void* base, int64_t start, int n, const float* f, const int64_t* i) {
  switch (st.dtype) {
    case Dtype::f32: std::memcpy(static_cast<float*>(base) + start, f, size_t(n) * 4); break;
    case Dtype::f16: {
      uint16_t* d = static_cast<uint16_t*>(base) + start;
      for (int j = 0; j < n; ++j) d[j] = float_to_half(f[j]);
      break;
    }
    case Dtype::bf16: {
      uint16_t* d = static_cast<uint16_t*>(base) + start;
      for (int j = 0; j < n; ++j) d[j] = float_to_bfloat(f[j]);
      break;
    }
    case Dtype::i32: {
      int32_t* d = static_cast<int32_t*>(base) + start;
      for (int j = 0; j < n; ++j) d[j] = int32_t(uint32_t(uint64_t(i[j])));
      break;
    }
    case Dtype::i64: std::memcpy(static_cast<int64_t*>(base) + start, i, size_t(n) * 8); break;
    case Dtype::boolean: {
      uint8_t* d = static_cast<uint8_t*>(base) + start;
      for (int j = 0; j < n; ++j) d[j] = uint8_t(i[j] != 0);
      break;
    }
  }
}

inline int64_t f_to_i(float v) {
  if (!(v == v)) return 0;
  if (v >= 9.2233720368547758e18f) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18f) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

// One instruction's registers over a tile: its result's scratch tile in
// either class (fd, id) and its operands a and b in either class (fa, ia;
// fb, ib), as execute() finds them before knowing their classes.
struct Tile {
  int n;
  float* fd;
  int64_t* id;
  const float* fa;
  const float* fb;
  const int64_t* ia;
  const int64_t* ib;
  float v;  // the instruction's immediate, if it has one
};

// The instructions of each group (kernel_spec.h) run in a function of
// their own, always inlined into execute(): each of its SIMD clones then
// vectorises their loops for its own target.
#define LOUPE_TILE_LOOPS [[gnu::always_inline]] inline

// The loop of most instructions: per element, declare its operands (the
// arguments after `expr`), then write `expr` to the register `dst`. The
// forms below differ in their operands' class and count.
#define ELEMENTWISE(dst, expr, ...) \
  for (int j = 0; j < n; ++j) {     \
    __VA_ARGS__;                    \
    dst[j] = (expr);                \
  }                                 \
  break
#define F1(expr) ELEMENTWISE(fd, expr, float a = fa[j])
#define F2(expr) ELEMENTWISE(fd, expr, float a = fa[j], b = fb[j])
#define FC(expr) ELEMENTWISE(id, int64_t(expr), float a = fa[j], b = fb[j])
#define FC_IMM(expr) ELEMENTWISE(id, int64_t(expr), float a = fa[j])
#define I1(expr) ELEMENTWISE(id, expr, int64_t a = ia[j])
#define I2(expr) ELEMENTWISE(id, expr, int64_t a = ia[j], b = ib[j])

LOUPE_TILE_LOOPS void run_float(Code code, const Tile& t) {
  const auto& [n, fd, id, fa, fb, ia, ib, v] = t;
  switch (code) {
    LOUPE_CODES_BUT_FLOAT(LOUPE_CODE_CASE)
    break;  // another group
    case Code::neg: F1(-a);
    case Code::exp: F1(fast_exp(a));
    case Code::log: F1(fast_log(a));
    case Code::tanh: F1(fast_tanh(a));
    case Code::sqrt: F1(std::sqrt(a));
    case Code::rsqrt: F1(1.0f / std::sqrt(a));
    case Code::relu: F1(a > 0.0f ? a : 0.0f);
    case Code::gelu: F1(fast_gelu(a));
    case Code::sigmoid: F1(fast_sigmoid(a));
    case Code::abs: F1(std::fabs(a));
    case Code::round_f16: F1(half_to_float(float_to_half(a)));
    case Code::round_bf16: F1(bfloat_to_float(float_to_bfloat(a)));
    case Code::rcp: F1(1.0f / a);
    case Code::add: F2(a + b);
    case Code::sub: F2(a - b);
    case Code::mul: F2(a * b);
    case Code::div: F2(a / b);
    case Code::pow:
      for (int j = 0; j < n; ++j) fd[j] = std::pow(fa[j], fb[j]);
      break;
    case Code::max: F2(a > b || a != a ? a : b);
    case Code::min: F2(a < b || a != a ? a : b);
    case Code::eq: FC(a == b);
    case Code::ne: FC(a != b);
    case Code::lt: FC(a < b);
    case Code::le: FC(a <= b);
    case Code::gt: FC(a > b);
    case Code::ge: FC(a >= b);
  }
}

LOUPE_TILE_LOOPS void run_immediate(Code code, const Tile& t) {
  const auto& [n, fd, id, fa, fb, ia, ib, v] = t;
  switch (code) {
    LOUPE_CODES_BUT_IMMEDIATE(LOUPE_CODE_CASE)
    break;  // another group
    case Code::add_imm: F1(a + v);
    case Code::mul_imm: F1(a * v);
    case Code::sub_imm: F1(a - v);
    case Code::rsub_imm: F1(v - a);
    case Code::div_imm: F1(a / v);
    case Code::rdiv_imm: F1(v / a);
    case Code::max_imm: F1(a > v || a != a ? a : v);
    case Code::min_imm: F1(a < v || a != a ? a : v);
    case Code::eq_imm: FC_IMM(a == v);
    case Code::ne_imm: FC_IMM(a != v);
    case Code::lt_imm: FC_IMM(a < v);
    case Code::le_imm: FC_IMM(a <= v);
    case Code::gt_imm: FC_IMM(a > v);
    case Code::ge_imm: FC_IMM(a >= v);
    case Code::where_f_imm_b: {
      const int64_t* cond = ia;
      for (int j = 0; j < n; ++j) fd[j] = cond[j] ? fb[j] : v;
      break;
    }
    case Code::where_f_imm_a: {
      const int64_t* cond = ia;
      for (int j = 0; j < n; ++j) fd[j] = cond[j] ? v : fb[j];
      break;
    }
  }
}

LOUPE_TILE_LOOPS void run_int(Code code, const Tile& t) {
  const auto& [n, fd, id, fa, fb, ia, ib, v] = t;
  switch (code) {
    LOUPE_CODES_BUT_INT(LOUPE_CODE_CASE)
    break;  // another group
    case Code::ineg: I1(int64_t(0ull - uint64_t(a)));
    case Code::iabs: I1(a < 0 ? int64_t(0ull - uint64_t(a)) : a);
    case Code::irelu: I1(a > 0 ? a : 0);
    case Code::inot: I1(int64_t(a == 0));
    case Code::wrap_i32: I1(int64_t(int32_t(uint32_t(uint64_t(a)))));
    case Code::to_bool: I1(int64_t(a != 0));
    case Code::iadd: I2(int64_t(uint64_t(a) + uint64_t(b)));
    case Code::isub: I2(int64_t(uint64_t(a) - uint64_t(b)));
    case Code::imul: I2(int64_t(uint64_t(a) * uint64_t(b)));
    case Code::idiv: I2(b == 0 || (b == -1 && a == std::numeric_limits<int64_t>::min()) ? 0 : a / b);
    case Code::imax: I2(a > b ? a : b);
    case Code::imin: I2(a < b ? a : b);
    case Code::iand: I2(int64_t(a != 0 && b != 0));
    case Code::ior: I2(int64_t(a != 0 || b != 0));
    case Code::ieq: I2(int64_t(a == b));
    case Code::ine: I2(int64_t(a != b));
    case Code::ilt: I2(int64_t(a < b));
    case Code::ile: I2(int64_t(a <= b));
    case Code::igt: I2(int64_t(a > b));
    case Code::ige: I2(int64_t(a >= b));
  }
}

#undef ELEMENTWISE
#undef F1
#undef F2
#undef FC
#undef FC_IMM
#undef I1
#undef I2

// The third operand, c, is a register of the value's class: read through
// `fr` when a float, from its scratch tile in I when an integer.
LOUPE_TILE_LOOPS void run_select(const Instr& in, const Tile& t, const int64_t* I, const float** fr) {
  const auto& [n, fd, id, fa, fb, ia, ib, v] = t;
  switch (in.code) {
    LOUPE_CODES_BUT_SELECT(LOUPE_CODE_CASE)
    break;  // another group
    case Code::where_f: {
      // a is the condition (class i); b and c the values.
      const int64_t* cond = ia;
      const float* x = fb;
      const float* y = fr[in.c];
      for (int j = 0; j < n; ++j) fd[j] = cond[j] ? x[j] : y[j];
      break;
    }
    case Code::where_i: {
      const int64_t* cond = ia;
      const int64_t* x = ib;
      const int64_t* y = I + in.c * kTile;
      for (int j = 0; j < n; ++j) id[j] = cond[j] ? x[j] : y[j];
      break;
    }
  }
}

LOUPE_TILE_LOOPS void run_conversion(Code code, const Tile& t) {
  const auto& [n, fd, id, fa, fb, ia, ib, v] = t;
  switch (code) {
    LOUPE_CODES_BUT_CONVERSION(LOUPE_CODE_CASE)
    break;  // another group
    case Code::f_to_i:
      for (int j = 0; j < n; ++j) id[j] = f_to_i(fa[j]);
      break;
    case Code::f_to_bool:
      for (int j = 0; j < n; ++j) id[j] = int64_t(fa[j] != 0.0f);
      break;
    case Code::i_to_f:
      for (int j = 0; j < n; ++j) fd[j] = float(ia[j]);
      break;
  }
}

// Sources compute from the immediate, or from the linear index of the
// tile's first element, `start`, and a key register a.
LOUPE_TILE_LOOPS void run_source(const Instr& in, int64_t start, const Tile& t) {
  const auto& [n, fd, id, fa, fb, ia, ib, v] = t;
  switch (in.code) {
    LOUPE_CODES_BUT_SOURCE(LOUPE_CODE_CASE)
    break;  // another group
    case Code::const_f: std::fill(fd, fd + n, v); break;
    case Code::const_i: std::fill(id, id + n, int64_t(in.imm)); break;
    case Code::iota:
      for (int j = 0; j < n; ++j) id[j] = ((start + j) / in.div) % in.mod;
      break;
    case Code::rand_bits:
      for (int j = 0; j < n; ++j) id[j] = int64_t(random_bits(uint64_t(ia[j]), uint64_t(start + j)));
      break;
    case Code::rand_uniform:
      for (int j = 0; j < n; ++j)
        fd[j] = float(random_bits(uint64_t(ia[j]), uint64_t(start + j)) >> 40) * 5.9604644775390625e-08f;
      break;
    case Code::rand_normal:
      for (int j = 0; j < n; ++j) {
        uint64_t r = random_bits(uint64_t(ia[j]), uint64_t(start + j));
        double u1 = (double(r >> 40) + 1.0) * 5.9604644775390625e-08;  // (0, 1]
        double u2 = double(r & 0xffffffu) * 5.9604644775390625e-08;    // [0, 1)
        fd[j] = float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
      }
      break;
  }
}

#undef LOUPE_TILE_LOOPS

// Runs one instruction over a tile. Float registers are read through
// `fr` (a load may point a register at its input buffer) and written to
// their scratch tile in F.
LOUPE_SIMD_CLONES void execute(const Instr& in, int n, int64_t start, float* F, int64_t* I, const float** fr) {
  const Tile t{.n = n,
               .fd = F + in.dst * kTile,
               .id = I + in.dst * kTile,
               .fa = in.a >= 0 ? fr[in.a] : nullptr,
               .fb = in.b >= 0 ? fr[in.b] : nullptr,
               .ia = in.a >= 0 ? I + in.a * kTile : nullptr,
               .ib = in.b >= 0 ? I + in.b * kTile : nullptr,
               .v = float(in.imm)};
  switch (in.code) {
    LOUPE_FLOAT_CODES(LOUPE_CODE_CASE) return run_float(in.code, t);
    LOUPE_IMMEDIATE_CODES(LOUPE_CODE_CASE) return run_immediate(in.code, t);
    LOUPE_INT_CODES(LOUPE_CODE_CASE) return run_int(in.code, t);
    LOUPE_SELECT_CODES(LOUPE_CODE_CASE) return run_select(in, t, I, fr);
    LOUPE_CONVERSION_CODES(LOUPE_CODE_CASE) return run_conversion(in.code, t);
    LOUPE_SOURCE_CODES(LOUPE_CODE_CASE) return run_source(in, start, t);
  }
}

// Folds a tile's register into the reduction's accumulators.
LOUPE_SIMD_CLONES void accumulate(const Reduce& r, const Shape& iter, const int64_t* idx, int n, const float* f,
                                  const int64_t* i, Scratch& s) {
  const int nd = int(iter.size());
  const int64_t s_last = r.out_strides.back();
  walk(iter, idx, r.out_strides, 0, n, [&](int pos, int seg, int64_t o, const int64_t* mi) {
    if (r.kind == ReduceKind::argmax) {
      double* av = s.acc_f.data();
      int64_t* ai = s.arg.data();
      for (int j = 0; j < seg; ++j) {
        double v = r.cls == RegClass::f ? double(f[pos + j]) : double(i[pos + j]);
        int64_t at = r.axis == nd - 1 ? mi[nd - 1] + j : mi[r.axis];
        int64_t oo = o + j * s_last;
        if (v > av[oo] || ai[oo] < 0) {
          av[oo] = v;
          ai[oo] = at;
        }
      }
      return;
    }
    if (r.cls == RegClass::f) {
      const float* v = f + pos;
      double* acc = s.acc_f.data();
      if (s_last == 0) {
        if (r.kind == ReduceKind::sum) {
          float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          int j = 0;
          for (; j + 8 <= seg; j += 8)
            for (int k = 0; k < 8; ++k) part[k] += v[j + k];
          double t = 0;
          for (int k = 0; k < 8; ++k) t += part[k];
          for (; j < seg; ++j) t += v[j];
          acc[o] += t;
        } else if (r.kind == ReduceKind::max) {
          float m = float(acc[o]);
          for (int j = 0; j < seg; ++j) m = v[j] > m || v[j] != v[j] ? v[j] : m;
          acc[o] = m;
        } else {
          float m = float(acc[o]);
          for (int j = 0; j < seg; ++j) m = v[j] < m || v[j] != v[j] ? v[j] : m;
          acc[o] = m;
        }
      } else {
        double* a = acc + o;
        if (r.kind == ReduceKind::sum) {
          for (int j = 0; j < seg; ++j) a[j * s_last] += v[j];
        } else if (r.kind == ReduceKind::max) {
          for (int j = 0; j < seg; ++j) a[j * s_last] = v[j] > a[j * s_last] || v[j] != v[j] ? v[j] : a[j * s_last];
        } else {
          for (int j = 0; j < seg; ++j) a[j * s_last] = v[j] < a[j * s_last] || v[j] != v[j] ? v[j] : a[j * s_last];
        }
      }
    } else {
      const int64_t* v = i + pos;
      int64_t* acc = s.acc_i.data();
      for (int j = 0; j < seg; ++j) {
        int64_t& a = acc[o + j * s_last];
        if (r.kind == ReduceKind::sum) a = int64_t(uint64_t(a) + uint64_t(v[j]));
        else if (r.kind == ReduceKind::max) a = v[j] > a ? v[j] : a;
        else a = v[j] < a ? v[j] : a;
      }
    }
  });
}

void init_accumulators(const Reduce& r, Scratch& s) {
  size_t n = size_t(r.out_size);
  if (r.kind == ReduceKind::argmax) {
    s.acc_f.assign(n, -std::numeric_limits<double>::infinity());
    s.arg.assign(n, -1);
    return;
  }
  if (r.cls == RegClass::f) {
    double init = r.kind == ReduceKind::sum   ? 0.0
                  : r.kind == ReduceKind::max ? -std::numeric_limits<double>::infinity()
                                              : std::numeric_limits<double>::infinity();
    s.acc_f.assign(n, init);
  } else {
    int64_t init = r.kind == ReduceKind::sum   ? 0
                   : r.kind == ReduceKind::max ? std::numeric_limits<int64_t>::min()
                                               : std::numeric_limits<int64_t>::max();
    s.acc_i.assign(n, init);
  }
}

void write_accumulators(const Reduce& r, void* base, Scratch& s) {
  const int64_t n = r.out_size;
  if (r.kind == ReduceKind::argmax) {
    int32_t* d = static_cast<int32_t*>(base);
    for (int64_t j = 0; j < n; ++j) d[j] = int32_t(std::max<int64_t>(s.arg[size_t(j)], 0));
    return;
  }
  // Reuse the store conversions, a tile at a time.
  float f[kTile];
  int64_t i[kTile];
  for (int64_t start = 0; start < n; start += kTile) {
    int len = int(std::min<int64_t>(kTile, n - start));
    if (r.cls == RegClass::f) {
      for (int j = 0; j < len; ++j) f[j] = float(s.acc_f[size_t(start + j)]);
    } else {
      for (int j = 0; j < len; ++j) i[j] = s.acc_i[size_t(start + j)];
    }
    Store st{r.cls, 0, r.out, r.dtype};
    do_store(st, base, start, len, f, i);
  }
}

// Whether an instruction's result is a float register.
bool writes_f(Code c) { return result_class(c) == RegClass::f; }

}  // namespace

void run_fused(const FusedKernel& k, const std::vector<void*>& buffers) {
  Scratch& s = t_scratch;
  s.f.resize(size_t(std::max(k.f_regs, 1)) * kTile);
  s.i.resize(size_t(std::max(k.i_regs, 1)) * kTile);
  float* F = s.f.data();
  int64_t* I = s.i.data();
  // Indexed by any register number: execute() looks up its operands here
  // before knowing their class (integer registers' entries go unused).
  std::vector<const float*> fr(size_t(std::max({k.f_regs, k.i_regs, 1})));
  for (size_t r = 0; r < fr.size(); ++r) fr[r] = r < size_t(k.f_regs) ? F + r * kTile : nullptr;
  const float* unused = nullptr;
  const Shape& iter = k.iter;
  const int nd = int(iter.size());
  const int64_t total = numel(iter);
  if (k.reduce) init_accumulators(*k.reduce, s);

  // Loads of a single broadcast element are the same in every tile.
  for (const Load& ld : k.loads) {
    if (!ld.invariant) continue;
    const void* base = buffers[size_t(ld.arg)];
    if (ld.cls == RegClass::f) {
      float v = 0;
      strided_convert_one(ld.dtype, base, ld.view.offset, &v, nullptr);
      std::fill(F + ld.dst * kTile, F + (ld.dst + 1) * kTile, v);
    } else {
      int64_t v = 0;
      strided_convert_one(ld.dtype, base, ld.view.offset, nullptr, &v);
      std::fill(I + ld.dst * kTile, I + (ld.dst + 1) * kTile, v);
    }
  }
  for (const Instr& in : k.hoisted) {
    execute(in, kTile, 0, F, I, fr.data());
    if (writes_f(in.code)) fr[size_t(in.dst)] = F + in.dst * kTile;
  }
  int64_t idx[kMaxDims] = {};
  for (int64_t start = 0; start < total; start += kTile) {
    int n = int(std::min<int64_t>(kTile, total - start));
    // The multi-index of the tile's first element.
    int64_t rem = start;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % iter[size_t(d)];
      rem /= iter[size_t(d)];
    }
    for (const Load& ld : k.loads) {
      if (ld.invariant) continue;
      if (ld.cls == RegClass::f)
        do_load(ld, buffers[size_t(ld.arg)], iter, idx, n, F + ld.dst * kTile, nullptr, &fr[size_t(ld.dst)]);
      else do_load(ld, buffers[size_t(ld.arg)], iter, idx, n, nullptr, I + ld.dst * kTile, &unused);
    }
    for (const Instr& in : k.code) {
      execute(in, n, start, F, I, fr.data());
      if (writes_f(in.code)) fr[size_t(in.dst)] = F + in.dst * kTile;
    }
    for (const Store& st : k.stores)
      do_store(st, buffers[size_t(st.out)], start, n, st.cls == RegClass::f ? fr[size_t(st.src)] : nullptr,
               I + st.src * kTile);
    if (k.reduce)
      accumulate(*k.reduce, iter, idx, n, k.reduce->cls == RegClass::f ? fr[size_t(k.reduce->src)] : nullptr,
                 I + k.reduce->src * kTile, s);
  }
  if (k.reduce) write_accumulators(*k.reduce, buffers[size_t(k.reduce->out)], s);
}

}  // namespace loupe::rt::backend::cpu
