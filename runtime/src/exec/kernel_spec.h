// Kernels as the compiler hands them to a backend: plain descriptions,
// independent of any device. The CPU backend interprets them
// (backend/cpu); a CUDA backend would generate or pick a CUDA kernel per
// spec. Buffers are passed separately, inputs then outputs, each
// contiguous in its own shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loupe/rt/dtype.h"
#include "loupe/rt/shape.h"

namespace loupe::rt::exec {

// ---- Fused elementwise (and reduction) kernels --------------------------
//
// A small register program run over an iteration space in tiles: loads
// read operands through strided views (so broadcasts, transposes and
// slices of an operand cost nothing), instructions compute in f32 (class
// f) or int64 (class i), stores write outputs contiguously, and an optional
// reduction folds one register into an output.

enum class RegClass : uint8_t { f, i };

// Every instruction, once, with the class of the register it writes. The
// instructions come in groups, so that a switch can name a whole group at
// once (`LOUPE_INT_CODES(LOUPE_CODE_CASE)`) and still have no `default:`;
// and what depends on an instruction's class (which registers hold its
// result) reads it from here (result_class), so that a new instruction is
// declared in one place and the compiler finds every switch it must join.
#define LOUPE_FLOAT_CODES(X) \
  /* f -> f */               \
  X(neg, f)                  \
  X(exp, f)                  \
  X(log, f)                  \
  X(tanh, f)                 \
  X(sqrt, f)                 \
  X(rsqrt, f)                \
  X(relu, f)                 \
  X(gelu, f)                 \
  X(sigmoid, f)              \
  X(abs, f)                  \
  X(round_f16, f)            \
  X(round_bf16, f)           \
  X(rcp, f)                  \
  /* f, f -> f */            \
  X(add, f)                  \
  X(sub, f)                  \
  X(mul, f)                  \
  X(div, f)                  \
  X(pow, f)                  \
  X(max, f)                  \
  X(min, f)                  \
  /* f, f -> i (0/1) */      \
  X(eq, i)                   \
  X(ne, i)                   \
  X(lt, i)                   \
  X(le, i)                   \
  X(gt, i)                   \
  X(ge, i)
#define LOUPE_IMMEDIATE_CODES(X)                                                 \
  /* f with the immediate: a+imm, a*imm, a-imm, imm-a, a/imm, imm/a, max, min */ \
  X(add_imm, f)                                                                  \
  X(mul_imm, f)                                                                  \
  X(sub_imm, f)                                                                  \
  X(rsub_imm, f)                                                                 \
  X(div_imm, f)                                                                  \
  X(rdiv_imm, f)                                                                 \
  X(max_imm, f)                                                                  \
  X(min_imm, f)                                                                  \
  /* f compared with the immediate -> i */                                       \
  X(eq_imm, i)                                                                   \
  X(ne_imm, i)                                                                   \
  X(lt_imm, i)                                                                   \
  X(le_imm, i)                                                                   \
  X(gt_imm, i)                                                                   \
  X(ge_imm, i)                                                                   \
  /* i ? f : imm, i ? imm : f */                                                 \
  X(where_f_imm_b, f)                                                            \
  X(where_f_imm_a, f)
#define LOUPE_INT_CODES(X) \
  /* i -> i */             \
  X(ineg, i)               \
  X(iabs, i)               \
  X(irelu, i)              \
  X(inot, i)               \
  X(wrap_i32, i)           \
  X(to_bool, i)            \
  /* i, i -> i */          \
  X(iadd, i)               \
  X(isub, i)               \
  X(imul, i)               \
  X(idiv, i)               \
  X(imax, i)               \
  X(imin, i)               \
  X(iand, i)               \
  X(ior, i)                \
  X(ieq, i)                \
  X(ine, i)                \
  X(ilt, i)                \
  X(ile, i)                \
  X(igt, i)                \
  X(ige, i)
// i ? x : y
#define LOUPE_SELECT_CODES(X) X(where_f, f) X(where_i, i)
#define LOUPE_CONVERSION_CODES(X) X(f_to_i, i) X(f_to_bool, i) X(i_to_f, f)
// Sources: an immediate; the index along an axis, (linear / div) % mod;
// counter-based random numbers from a key register and the linear index.
#define LOUPE_SOURCE_CODES(X) \
  X(const_f, f)               \
  X(const_i, i)               \
  X(iota, i)                  \
  X(rand_bits, i)             \
  X(rand_uniform, f)          \
  X(rand_normal, f)
// Every instruction, group by group, each group through the macro given
// for it: LOUPE_CODES passes one macro to all, and the lists of the
// instructions outside one group (below) pass LOUPE_CODE_NONE for that group.
#define LOUPE_CODES_BY_GROUP(FLOAT, IMMEDIATE, INT, SELECT, CONVERSION, SOURCE) \
  LOUPE_FLOAT_CODES(FLOAT)                                                      \
  LOUPE_IMMEDIATE_CODES(IMMEDIATE)                                              \
  LOUPE_INT_CODES(INT)                                                          \
  LOUPE_SELECT_CODES(SELECT)                                                    \
  LOUPE_CONVERSION_CODES(CONVERSION)                                            \
  LOUPE_SOURCE_CODES(SOURCE)
#define LOUPE_CODE_NONE(code, cls)
#define LOUPE_CODES(X) LOUPE_CODES_BY_GROUP(X, X, X, X, X, X)
// The instructions outside one group: a function given only that group's
// instructions switches over them naming the others with these, as it has
// no `default:` either.
#define LOUPE_CODES_BUT_FLOAT(X) LOUPE_CODES_BY_GROUP(LOUPE_CODE_NONE, X, X, X, X, X)
#define LOUPE_CODES_BUT_IMMEDIATE(X) LOUPE_CODES_BY_GROUP(X, LOUPE_CODE_NONE, X, X, X, X)
#define LOUPE_CODES_BUT_INT(X) LOUPE_CODES_BY_GROUP(X, X, LOUPE_CODE_NONE, X, X, X)
#define LOUPE_CODES_BUT_SELECT(X) LOUPE_CODES_BY_GROUP(X, X, X, LOUPE_CODE_NONE, X, X)
#define LOUPE_CODES_BUT_CONVERSION(X) LOUPE_CODES_BY_GROUP(X, X, X, X, LOUPE_CODE_NONE, X)
#define LOUPE_CODES_BUT_SOURCE(X) LOUPE_CODES_BY_GROUP(X, X, X, X, X, LOUPE_CODE_NONE)
// The case labels of a group, for a switch over Code.
#define LOUPE_CODE_CASE(code, cls) case Code::code:

enum class Code : uint8_t {
#define LOUPE_CODE_ENUMERATOR(code, cls) code,
  LOUPE_CODES(LOUPE_CODE_ENUMERATOR)
#undef LOUPE_CODE_ENUMERATOR
};

// The class of the register an instruction writes, by Code.
inline constexpr RegClass kResultClass[] = {
#define LOUPE_CODE_RESULT_CLASS(code, cls) RegClass::cls,
    LOUPE_CODES(LOUPE_CODE_RESULT_CLASS)
#undef LOUPE_CODE_RESULT_CLASS
};
constexpr RegClass result_class(Code c) { return kResultClass[size_t(c)]; }

struct Instr {
  Code code;
  int16_t dst = -1, a = -1, b = -1, c = -1;
  double imm = 0;
  int64_t div = 1, mod = 1;
};

// A strided view of an operand over the iteration space.
struct View {
  int64_t offset = 0;
  std::vector<int64_t> strides;  // per iteration axis, in elements; 0 broadcasts
  bool operator==(const View&) const = default;
};

// Buffer indices (Load::arg, Store::out, Reduce::out) count over the
// kernel's buffers, inputs first.
struct Load {
  int arg = 0;
  Dtype dtype = Dtype::f32;
  View view;
  RegClass cls = RegClass::f;
  int16_t dst = 0;
  bool invariant = false;  // one element broadcast everywhere: loaded once
};

struct Store {
  RegClass cls = RegClass::f;
  int16_t src = 0;
  int out = 0;
  Dtype dtype = Dtype::f32;
};

enum class ReduceKind : uint8_t { sum, max, min, argmax };

struct Reduce {
  ReduceKind kind = ReduceKind::sum;
  RegClass cls = RegClass::f;
  int16_t src = 0;
  int out = 0;
  Dtype dtype = Dtype::f32;
  std::vector<int64_t> out_strides;  // per iteration axis; 0 on reduced axes
  int64_t out_size = 0;
  int axis = -1;  // argmax: the reduced iteration axis
};

struct FusedKernel {
  Shape iter;  // the iteration space
  std::vector<Load> loads;
  // Instructions whose operands are the same in every tile (constants,
  // broadcast scalars): run once, for a whole tile, before the loop.
  std::vector<Instr> hoisted;
  std::vector<Instr> code;
  std::vector<Store> stores;
  std::optional<Reduce> reduce;
  int f_regs = 0, i_regs = 0;
};

// ---- Other kernels ----------------------------------------------------------

// out[b] = op(a[b]) @ op(b[b]) over broadcast batch axes.
struct MatmulKernel {
  Dtype dtype = Dtype::f32;
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  Shape batch;                          // the result's batch axes
  std::vector<int64_t> a_batch_stride;  // per batch axis, in matrices; 0 broadcasts
  std::vector<int64_t> b_batch_stride;
};

// Where each batch's matrices of a and b start (in matrices), batch by
// batch in row-major order of the batch axes.
struct MatmulOffsets {
  std::vector<int64_t> a, b;
};
inline MatmulOffsets batch_offsets(const MatmulKernel& k) {
  const int64_t batches = numel(k.batch);
  const size_t nd = k.batch.size();
  MatmulOffsets off{std::vector<int64_t>(size_t(batches)), std::vector<int64_t>(size_t(batches))};
  std::vector<int64_t> idx(nd, 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (size_t d = 0; d < nd; ++d) {
      off.a[size_t(bi)] += idx[d] * k.a_batch_stride[d];
      off.b[size_t(bi)] += idx[d] * k.b_batch_stride[d];
    }
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < k.batch[d]) break;
      idx[d] = 0;
    }
  }
  return off;
}

// out[i, :] = table[clamp(idx[i]), :]
struct GatherKernel {
  Dtype dtype = Dtype::f32, index_dtype = Dtype::i32;
  int64_t rows = 0, row_size = 0, count = 0;
};

// out = 0; out[clamp(idx[i]), :] += updates[i, :]
struct ScatterAddKernel {
  Dtype dtype = Dtype::f32, index_dtype = Dtype::i32;
  int64_t rows = 0, row_size = 0, count = 0;
};

struct ConcatKernel {
  Dtype dtype = Dtype::f32;
  int64_t outer = 0;           // product of the axes before the concat axis
  std::vector<int64_t> chunk;  // per input: its extent on the axis times the inner size
};

// out = 0; out[starts + i * steps] = in[i]
struct PadKernel {
  Dtype dtype = Dtype::f32;
  Shape in_shape, out_shape;
  std::vector<int64_t> starts, steps;
};

struct AttentionKernel {
  Dtype dtype = Dtype::f32;
  int64_t batch = 0, sq = 0, sk = 0, d = 0, dv = 0;
  bool causal = false;
  float scale = 1;
};

// Inputs q, k, v, o, do; one output holding dq, dk, dv back to back.
struct AttentionBwdKernel {
  AttentionKernel fwd;
};

using KernelBody = std::variant<FusedKernel, MatmulKernel, GatherKernel, ScatterAddKernel, ConcatKernel, PadKernel,
                                AttentionKernel, AttentionBwdKernel>;

struct KernelSpec {
  const char* name = "";  // interned: names the kernel in the trace
  KernelBody body;
};

}  // namespace loupe::rt::exec
