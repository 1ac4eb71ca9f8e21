// CUDA C++ for the kernels that move data: gather, scatter-add,
// concatenation and padding. Sizes are constants of the source (each spec
// gets a kernel of its own, cached by its text), so index arithmetic
// divides by constants.
#include <fmt/format.h>

#include <algorithm>

#include "backend/cuda/kernel_plan.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::backend::cuda {

using namespace exec;

namespace {

constexpr uint32_t kBlock = 256;

// An unsigned type of an element's size: moving data needs no conversion.
const char* word_type(Dtype d) {
  switch (itemsize(d)) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 4: return "unsigned int";
    default: return "unsigned long long";
  }
}

const char* index_type(Dtype d) { return d == Dtype::i64 ? "long long" : "int"; }

int64_t blocks_for(int64_t n) { return std::max<int64_t>(1, (n + kBlock - 1) / kBlock); }

PlanStep launch(std::string entry, std::vector<int> args, int64_t work) {
  PlanStep s;
  s.entry = std::move(entry);
  s.args = std::move(args);
  s.block = kBlock;
  s.blocks = blocks_for(work);
  return s;
}

PlanStep zero(int buffer, size_t bytes) {
  PlanStep s;
  s.kind = PlanStep::Kind::zero;
  s.buffer = buffer;
  s.bytes = bytes;
  return s;
}

const char* kLoop =
    "  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * "
    "blockDim.x) {\n";

}  // namespace

KernelPlan plan_gather(const GatherKernel& k) {
  KernelPlan p;
  p.buffers = 3;
  const int64_t total = k.count * k.row_size;
  const size_t out_bytes = size_t(total) * itemsize(k.dtype);
  if (k.rows == 0) {  // an empty table: zeros, as on the CPU device
    if (out_bytes > 0) p.steps.push_back(zero(2, out_bytes));
    return p;
  }
  const char* w = word_type(k.dtype);
  p.source =
      prelude() + fmt::format(R"(
extern "C" __global__ void __launch_bounds__(256) loupe_gather(const void* table, const void* idx, void* out) {{
  const long long total = {0};
{1}    long long i = e / {2}, j = e % {2};
    long long r = (long long)((const {3}*)idx)[i];
    r = r < 0 ? 0 : (r > {4} ? {4} : r);
    (({5}*)out)[e] = ((const {5}*)table)[r * {2} + j];
  }}
}}
)",
                              total, kLoop, std::max<int64_t>(k.row_size, 1), index_type(k.index_dtype), k.rows - 1, w);
  p.steps.push_back(launch("loupe_gather", {0, 1, 2}, total));
  return p;
}

KernelPlan plan_scatter_add(const ScatterAddKernel& k) {
  // Updates add atomically: into the output itself for f32, i32 and i64
  // (integers wrap as on the CPU device), and into an f32 scratch buffer for
  // f16 and bf16, converted at the end, as the CPU device sums in f32.
  KernelPlan p;
  p.buffers = 3;
  const int64_t total = k.rows * k.row_size;
  const int64_t updates = k.count * k.row_size;
  if (total == 0) return p;
  const bool narrow = k.dtype == Dtype::f16 || k.dtype == Dtype::bf16;
  const int acc_buffer = narrow ? 3 : 2;
  if (narrow) p.scratch_bytes = size_t(total) * 4;
  p.steps.push_back(zero(acc_buffer, size_t(total) * (narrow ? 4 : itemsize(k.dtype))));
  std::string add;
  switch (k.dtype) {
    case Dtype::f32: add = "atomicAdd((float*)acc + o, ((const float*)upd)[e]);"; break;
    case Dtype::f16: add = "atomicAdd((float*)acc + o, lp_h2f(((const unsigned short*)upd)[e]));"; break;
    case Dtype::bf16: add = "atomicAdd((float*)acc + o, lp_bf2f(((const unsigned short*)upd)[e]));"; break;
    case Dtype::i32: add = "atomicAdd((unsigned int*)acc + o, (unsigned int)((const int*)upd)[e]);"; break;
    case Dtype::i64:
      add = "atomicAdd((unsigned long long*)acc + o, (unsigned long long)((const long long*)upd)[e]);";
      break;
    case Dtype::boolean:
      throw RuntimeError(fmt::format("scatter_add of {} is not supported on the CUDA device", dtype_name(k.dtype)));
  }
  std::string src = prelude() + fmt::format(R"(
extern "C" __global__ void __launch_bounds__(256) loupe_scatter_add(const void* idx, const void* upd, void* acc) {{
  const long long total = {0};
{1}    long long i = e / {2}, j = e % {2};
    long long r = (long long)((const {3}*)idx)[i];
    r = r < 0 ? 0 : (r > {4} ? {4} : r);
    long long o = r * {2} + j;
    {5}
  }}
}}
)",
                                            updates, kLoop, std::max<int64_t>(k.row_size, 1), index_type(k.index_dtype),
                                            k.rows - 1, add);
  if (updates > 0) p.steps.push_back(launch("loupe_scatter_add", {0, 1, acc_buffer}, updates));
  if (narrow) {
    src += fmt::format(R"(
extern "C" __global__ void __launch_bounds__(256) loupe_narrow(const void* acc, void* out) {{
  const long long total = {0};
{1}    ((unsigned short*)out)[e] = {2}(((const float*)acc)[e]);
  }}
}}
)",
                       total, kLoop, k.dtype == Dtype::f16 ? "lp_f2h" : "lp_f2bf");
    p.steps.push_back(launch("loupe_narrow", {3, 2}, total));
  }
  p.source = std::move(src);
  return p;
}

KernelPlan plan_concat(const ConcatKernel& k) {
  KernelPlan p;
  const int inputs = int(k.chunk.size());
  p.buffers = inputs + 1;
  int64_t row = 0;
  for (int64_t c : k.chunk) row += c;
  const int64_t total = k.outer * row;
  if (total == 0) return p;
  const char* w = word_type(k.dtype);
  std::string params, pick;
  int64_t start = 0;
  for (int i = 0; i < inputs; ++i) {
    params += fmt::format("const void* in{}, ", i);
    if (k.chunk[size_t(i)] == 0) continue;
    pick += fmt::format("    {}if (c < {}) v = ((const {}*)in{})[o * {} + c - {}];\n", start == 0 ? "" : "else ",
                        start + k.chunk[size_t(i)], w, i, k.chunk[size_t(i)], start);
    start += k.chunk[size_t(i)];
  }
  p.source = prelude() + fmt::format(R"(
extern "C" __global__ void __launch_bounds__(256) loupe_concat({0}void* out) {{
  const long long total = {1};
{2}    long long o = e / {3}, c = e % {3};
    {4} v = 0;
{5}    (({4}*)out)[e] = v;
  }}
}}
)",
                                     params, total, kLoop, row, w, pick);
  std::vector<int> args;
  for (int i = 0; i <= inputs; ++i) args.push_back(i);
  p.steps.push_back(launch("loupe_concat", args, total));
  return p;
}

KernelPlan plan_pad(const PadKernel& k) {
  KernelPlan p;
  p.buffers = 2;
  const size_t out_bytes = size_t(numel(k.out_shape)) * itemsize(k.dtype);
  if (out_bytes > 0) p.steps.push_back(zero(1, out_bytes));
  const int64_t total = numel(k.in_shape);
  if (total == 0) return p;
  const int nd = int(k.in_shape.size());
  std::vector<int64_t> ostr = contiguous_strides(k.out_shape);
  // The output offset of input element e, axis by axis.
  std::string index = "    long long t = e, off = 0;\n";
  for (int d = nd - 1; d >= 0; --d) {
    int64_t ext = k.in_shape[size_t(d)];
    index += fmt::format("    off += ({} + (t % {}) * {}) * {};\n", k.starts[size_t(d)], ext, k.steps[size_t(d)],
                         ostr[size_t(d)]);
    index += fmt::format("    t /= {};\n", ext);
  }
  const char* w = word_type(k.dtype);
  p.source = prelude() + fmt::format(R"(
extern "C" __global__ void __launch_bounds__(256) loupe_pad(const void* in, void* out) {{
  const long long total = {0};
{1}{2}    (({3}*)out)[off] = ((const {3}*)in)[e];
  }}
}}
)",
                                     total, kLoop, index, w);
  p.steps.push_back(launch("loupe_pad", {0, 1}, total));
  return p;
}

}  // namespace loupe::rt::backend::cuda
