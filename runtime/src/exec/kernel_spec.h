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

enum class Code : uint8_t {
  // f -> f
  neg,
  exp,
  log,
  tanh,
  sqrt,
  rsqrt,
  relu,
  gelu,
  sigmoid,
  abs,
  round_f16,
  round_bf16,
  rcp,
  // f, f -> f
  add,
  sub,
  mul,
  div,
  pow,
  max,
  min,
  // f, f -> i (0/1)
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  // f with the immediate: a+imm, a*imm, a-imm, imm-a, a/imm, imm/a, max, min
  add_imm,
  mul_imm,
  sub_imm,
  rsub_imm,
  div_imm,
  rdiv_imm,
  max_imm,
  min_imm,
  // f compared with the immediate -> i
  eq_imm,
  ne_imm,
  lt_imm,
  le_imm,
  gt_imm,
  ge_imm,
  // i ? f : imm, i ? imm : f
  where_f_imm_b,
  where_f_imm_a,
  // i -> i
  ineg,
  iabs,
  irelu,
  inot,
  wrap_i32,
  to_bool,
  // i, i -> i
  iadd,
  isub,
  imul,
  idiv,
  imax,
  imin,
  iand,
  ior,
  ieq,
  ine,
  ilt,
  ile,
  igt,
  ige,
  // i ? x : y
  where_f,
  where_i,
  // conversions
  f_to_i,
  f_to_bool,
  i_to_f,
  // sources: an immediate; the index along an axis, (linear / div) % mod;
  // counter-based random numbers from a key register and the linear index
  const_f,
  const_i,
  iota,
  rand_bits,
  rand_uniform,
  rand_normal,
};

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
