// Fused attention on the CUDA device: a flash-style kernel of loupe's own.
// Each thread owns one query row; a block of them walks the keys in tiles
// staged in shared memory and keeps FlashAttention's online softmax (the
// running maximum, the running sum and the unnormalised output), so that no
// [Sq, Sk] score matrix exists and memory stays linear in the sequence
// length. Not tuned for tensor cores: its job is to be the same algorithm
// as the CPU device's (backend/cpu/attention_kernel.cpp), on the GPU.
//
// The backward pass is two kernels: one per query row (its log-sum-exp,
// D = dO·O, then dQ), one per key row (dK and dV), recomputing scores
// from the saved log-sum-exp as the CPU device does.
#include <fmt/format.h>

#include <algorithm>

#include "backend/cuda/kernel_plan.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::backend::cuda {

using namespace exec;

namespace {

constexpr int kRows = 64;            // query (or key) rows per block: one per thread
constexpr int kMaxHeadDim = 512;     // q/k and v widths the kernels hold in registers
constexpr int kSharedFloats = 8192;  // 32 KiB of shared memory per block for tiles

// How the kernels read an element of a buffer of `d` as a float (ld's
// body) and write one back (st's).
struct ElementAccess {
  const char* load;
  const char* store;
};

ElementAccess element_access(Dtype d) {
  switch (d) {
    case Dtype::f16: return {"lp_h2f(((const unsigned short*)p)[i])", "((unsigned short*)p)[i] = lp_f2h(v)"};
    case Dtype::bf16: return {"lp_bf2f(((const unsigned short*)p)[i])", "((unsigned short*)p)[i] = lp_f2bf(v)"};
    case Dtype::f32:
    case Dtype::i32:
    case Dtype::i64:
    case Dtype::boolean: break;  // f32: check() turns the others away
  }
  return {"((const float*)p)[i]", "((float*)p)[i] = v"};
}

void check(const AttentionKernel& k) {
  if (k.dtype != Dtype::f32 && k.dtype != Dtype::f16 && k.dtype != Dtype::bf16)
    throw RuntimeError(fmt::format("attention of {} is not supported on the CUDA device", dtype_name(k.dtype)));
  if (k.d > kMaxHeadDim || k.dv > kMaxHeadDim)
    throw RuntimeError(
        fmt::format("fused attention on the CUDA device supports head dimensions up to {} (got q/k {}, "
                    "v {}); use attention(..., naive)",
                    kMaxHeadDim, k.d, k.dv));
}

// Constants and element access shared by the forward and backward sources.
std::string common(const AttentionKernel& k, int tile) {
  const ElementAccess access = element_access(k.dtype);
  return prelude() + fmt::format(R"(
#define BATCH {0}ll
#define SQ {1}
#define SK {2}
#define D {3}
#define DV {4}
#define CAUSAL {5}
#define TILE {6}
#define ROWS {7}
__device__ __forceinline__ float ld(const void* p, long long i) {{ return {8}; }}
__device__ __forceinline__ void st(void* p, long long i, float v) {{ {9}; }}
// Keys j < key_end(i) are visible to query i (the last query sees the last key).
__device__ __forceinline__ int key_end(int i) {{
  if (!CAUSAL) return SK;
  int e = i + 1 + (SK - SQ);
  return e < 0 ? 0 : (e > SK ? SK : e);
}}
)",
                                 k.batch, k.sq, k.sk, k.d, k.dv, k.causal ? 1 : 0, tile, kRows, access.load,
                                 access.store);
}

// Where each thread of a query-row kernel stands: its query row i, and the
// keys its block (kend, for the last row's causal end) and it (my_end) see.
constexpr const char* kQueryRowSetup = R"(  const int i = blockIdx.x * ROWS + threadIdx.x;
  const bool active = i < SQ;
  const int last = min((int)(blockIdx.x * ROWS + ROWS), SQ) - 1;
  const int kend = key_end(last), my_end = key_end(i);
)";

// Opens a query-row kernel's walk over the keys in tiles of TILE: the block
// stages each tile's keys (and values, when `with_values`) in shared memory,
// then every active thread visits the tile's keys j < jn it may see.
std::string key_tile_loop(bool with_values) {
  std::string o = R"(    for (int j0 = 0; j0 < kend; j0 += TILE) {
      const int n = min(TILE, kend - j0);
      __syncthreads();
      for (int t = threadIdx.x; t < n * D; t += blockDim.x) ks[t] = ld(k_, (b * SK + j0) * D + t);
)";
  if (with_values) {
    o += R"(      for (int t = threadIdx.x; t < n * DV; t += blockDim.x) vs[t] = ld(v_, (b * SK + j0) * DV + t);
)";
  }
  return o + R"(      __syncthreads();
      if (!active) continue;
      const int jn = min(n, my_end - j0);
)";
}

int tile_rows(int64_t floats_per_row) {
  return int(std::clamp<int64_t>(kSharedFloats / std::max<int64_t>(floats_per_row, 1), 1, 64));
}

uint32_t grid_y(int64_t batch) { return uint32_t(std::clamp<int64_t>(batch, 1, 65535)); }

// A launch of `entry` with a thread per row (query or key) in blocks of
// kRows, each block walking the batch along y.
PlanStep row_launch(std::string entry, std::vector<int> args, int64_t rows, int64_t batch) {
  PlanStep s;
  s.entry = std::move(entry);
  s.args = std::move(args);
  s.block = kRows;
  s.blocks = (rows + kRows - 1) / kRows;
  s.grid_stride = false;
  s.grid_y = grid_y(batch);
  return s;
}

// The backward pass's source after common(): where dK and dV start in the
// packed output, and the key rows a block of the key-row kernel stages.
std::string bwd_defines(int tile_kv) {
  return fmt::format(R"(
#define DK_OFF (BATCH * SQ * D)
#define DV_OFF (BATCH * SQ * D + BATCH * SK * D)
#define TILE_KV {tile_kv}
)",
                     fmt::arg("tile_kv", tile_kv));
}

// The query-row kernel: per query row, its log-sum-exp and D = dO·O (kept
// in the scratch buffer for the key-row kernel), then dQ.
std::string bwd_query_kernel(const AttentionKernel& k) {
  return fmt::format(R"(
extern "C" __global__ void __launch_bounds__(ROWS) loupe_attention_bwd_q(const void* q_, const void* k_, const void* v_,
    const void* o_, const void* do_, void* packed, void* scratch) {{
  __shared__ float ks[TILE * D];
  __shared__ float vs[TILE * DV];
  float* lse_out = (float*)scratch;
  float* dsum_out = (float*)scratch + BATCH * SQ;
{row_setup}  const float scale = {scale};
  for (long long b = blockIdx.y; b < BATCH; b += gridDim.y) {{
    float q[D], dout[DV], dq[D];
    float m = -__int_as_float(0x7f800000), l = 0.0f, dsum = 0.0f;
    for (int c = 0; c < D; ++c) {{
      q[c] = active ? ld(q_, (b * SQ + i) * D + c) : 0.0f;
      dq[c] = 0.0f;
    }}
    for (int c = 0; c < DV; ++c) {{
      dout[c] = active ? ld(do_, (b * SQ + i) * DV + c) : 0.0f;
      dsum += active ? dout[c] * ld(o_, (b * SQ + i) * DV + c) : 0.0f;
    }}
    // Pass 1: the row's log-sum-exp.
{key_tiles_no_values}      for (int j = 0; j < jn; ++j) {{
        float s = 0.0f;
        for (int c = 0; c < D; ++c) s += q[c] * ks[j * D + c];
        s *= scale;
        if (s > m) {{
          l = l * expf(m - s) + 1.0f;
          m = s;
        }} else {{
          l += expf(s - m);
        }}
      }}
    }}
    const float lse = l > 0.0f ? m + logf(l) : __int_as_float(0x7f800000);
    if (active) {{
      lse_out[b * SQ + i] = lse;
      dsum_out[b * SQ + i] = dsum;
    }}
    // Pass 2: dQ = sum_j P (dP - D) K * scale.
{key_tiles}      for (int j = 0; j < jn; ++j) {{
        float s = 0.0f, dp = 0.0f;
        for (int c = 0; c < D; ++c) s += q[c] * ks[j * D + c];
        for (int c = 0; c < DV; ++c) dp += dout[c] * vs[j * DV + c];
        const float pr = expf(s * scale - lse);
        const float ds = pr * (dp - dsum) * scale;
        for (int c = 0; c < D; ++c) dq[c] += ds * ks[j * D + c];
      }}
    }}
    if (active)
      for (int c = 0; c < D; ++c) st(packed, (b * SQ + i) * D + c, dq[c]);
  }}
}}
)",
                     fmt::arg("row_setup", kQueryRowSetup), fmt::arg("key_tiles", key_tile_loop(true)),
                     fmt::arg("key_tiles_no_values", key_tile_loop(false)), fmt::arg("scale", float_literal(k.scale)));
}

// The key-row kernel: per key row, dK and dV, from the saved log-sum-exp
// and D of the queries that see it.
std::string bwd_key_kernel(const AttentionKernel& k) {
  return fmt::format(R"(
extern "C" __global__ void __launch_bounds__(ROWS) loupe_attention_bwd_kv(const void* q_, const void* k_, const void* v_,
    const void* do_, void* packed, const void* scratch) {{
  __shared__ float qs[TILE_KV * D];
  __shared__ float dos[TILE_KV * DV];
  __shared__ float lses[TILE_KV];
  __shared__ float dsums[TILE_KV];
  const float* lse_in = (const float*)scratch;
  const float* dsum_in = (const float*)scratch + BATCH * SQ;
  const int j = blockIdx.x * ROWS + threadIdx.x;
  const bool active = j < SK;
  // Query i sees key j when j < key_end(i): from i = j - (SK - SQ) on.
  const int first = blockIdx.x * ROWS;
  int qstart = CAUSAL ? first - (SK - SQ) : 0;
  qstart = qstart < 0 ? 0 : qstart;
  int my_start = CAUSAL ? j - (SK - SQ) : 0;
  my_start = my_start < 0 ? 0 : my_start;
  const float scale = {scale};
  for (long long b = blockIdx.y; b < BATCH; b += gridDim.y) {{
    float kr[D], vr[DV], dk[D], dv[DV];
    for (int c = 0; c < D; ++c) {{
      kr[c] = active ? ld(k_, (b * SK + j) * D + c) : 0.0f;
      dk[c] = 0.0f;
    }}
    for (int c = 0; c < DV; ++c) {{
      vr[c] = active ? ld(v_, (b * SK + j) * DV + c) : 0.0f;
      dv[c] = 0.0f;
    }}
    for (int i0 = qstart; i0 < SQ; i0 += TILE_KV) {{
      const int n = min(TILE_KV, SQ - i0);
      __syncthreads();
      for (int t = threadIdx.x; t < n * D; t += blockDim.x) qs[t] = ld(q_, (b * SQ + i0) * D + t);
      for (int t = threadIdx.x; t < n * DV; t += blockDim.x) dos[t] = ld(do_, (b * SQ + i0) * DV + t);
      for (int t = threadIdx.x; t < n; t += blockDim.x) {{
        lses[t] = lse_in[b * SQ + i0 + t];
        dsums[t] = dsum_in[b * SQ + i0 + t];
      }}
      __syncthreads();
      if (!active) continue;
      for (int ii = (my_start > i0 ? my_start - i0 : 0); ii < n; ++ii) {{
        float s = 0.0f, dp = 0.0f;
        for (int c = 0; c < D; ++c) s += qs[ii * D + c] * kr[c];
        for (int c = 0; c < DV; ++c) dp += dos[ii * DV + c] * vr[c];
        const float pr = expf(s * scale - lses[ii]);
        const float ds = pr * (dp - dsums[ii]) * scale;
        for (int c = 0; c < DV; ++c) dv[c] += pr * dos[ii * DV + c];
        for (int c = 0; c < D; ++c) dk[c] += ds * qs[ii * D + c];
      }}
    }}
    if (active) {{
      for (int c = 0; c < D; ++c) st(packed, DK_OFF + (b * SK + j) * D + c, dk[c]);
      for (int c = 0; c < DV; ++c) st(packed, DV_OFF + (b * SK + j) * DV + c, dv[c]);
    }}
  }}
}}
)",
                     fmt::arg("scale", float_literal(k.scale)));
}

}  // namespace

KernelPlan plan_attention(const AttentionKernel& k) {
  check(k);
  KernelPlan p;
  p.buffers = 4;
  if (k.batch == 0 || k.sq == 0) return p;
  const int tile = tile_rows(k.d + k.dv);
  p.source =
      common(k, tile) + fmt::format(R"(
extern "C" __global__ void __launch_bounds__(ROWS) loupe_attention(const void* q_, const void* k_, const void* v_,
                                                                   void* o_) {{
  __shared__ float ks[TILE * D];
  __shared__ float vs[TILE * DV];
{row_setup}  const float scale = {scale};
  for (long long b = blockIdx.y; b < BATCH; b += gridDim.y) {{
    float q[D], acc[DV];
    float m = -__int_as_float(0x7f800000), l = 0.0f;
    for (int c = 0; c < D; ++c) q[c] = active ? ld(q_, (b * SQ + i) * D + c) : 0.0f;
    for (int c = 0; c < DV; ++c) acc[c] = 0.0f;
{key_tiles}      for (int j = 0; j < jn; ++j) {{
        float s = 0.0f;
        for (int c = 0; c < D; ++c) s += q[c] * ks[j * D + c];
        s *= scale;
        if (s > m) {{
          const float corr = expf(m - s);
          l = l * corr + 1.0f;
          for (int c = 0; c < DV; ++c) acc[c] = acc[c] * corr + vs[j * DV + c];
          m = s;
        }} else {{
          const float e = expf(s - m);
          l += e;
          for (int c = 0; c < DV; ++c) acc[c] += e * vs[j * DV + c];
        }}
      }}
    }}
    if (active) {{
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      for (int c = 0; c < DV; ++c) st(o_, (b * SQ + i) * DV + c, acc[c] * inv);
    }}
  }}
}}
)",
                                    fmt::arg("row_setup", kQueryRowSetup), fmt::arg("key_tiles", key_tile_loop(true)),
                                    fmt::arg("scale", float_literal(k.scale)));
  p.steps.push_back(row_launch("loupe_attention", {0, 1, 2, 3}, k.sq, k.batch));
  return p;
}

KernelPlan plan_attention_bwd(const AttentionBwdKernel& kb) {
  const AttentionKernel& k = kb.fwd;
  check(k);
  KernelPlan p;
  p.buffers = 6;  // q, k, v, o, do, packed (dq | dk | dv)
  const int64_t out = k.batch * (k.sq * k.d + k.sk * k.d + k.sk * k.dv);
  if (out == 0) return p;
  // Scratch: per query row, its log-sum-exp, then D = dO·O.
  p.scratch_bytes = size_t(2 * k.batch * std::max<int64_t>(k.sq, 1)) * 4;
  const int scratch = 6;
  if (k.sq == 0 || k.sk == 0) {  // no scores: every gradient is zero
    p.steps.push_back(PlanStep{.kind = PlanStep::Kind::zero, .buffer = 5, .bytes = size_t(out) * itemsize(k.dtype)});
    return p;
  }
  const int tile_q = tile_rows(k.d + k.dv), tile_kv = tile_rows(k.d + k.dv + 2);
  p.source = common(k, tile_q) + bwd_defines(tile_kv) + bwd_query_kernel(k) + bwd_key_kernel(k);
  p.steps.push_back(row_launch("loupe_attention_bwd_q", {0, 1, 2, 3, 4, 5, scratch}, k.sq, k.batch));
  p.steps.push_back(row_launch("loupe_attention_bwd_kv", {0, 1, 2, 4, 5, scratch}, k.sk, k.batch));
  return p;
}

}  // namespace loupe::rt::backend::cuda
