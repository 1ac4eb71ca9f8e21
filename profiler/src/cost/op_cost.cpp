// The formulas of op_cost.h, one function per kind of op, and the table
// that names the ops each covers (kFormulas). Matmuls, convolutions and
// attention follow torch.utils.flop_counter (PyTorch 2.15) term for term;
// the rest follow DeepSpeed's flops profiler (deepspeed/profiling/
// flops_profiler/profiler.py). docs/analyses.md ("FLOPs and bytes") lists
// them; a new op is a row of kFormulas and a line there.
#include "loupe/prof/op_cost.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace loupe::prof {

namespace {

using Shape = std::vector<int64_t>;

// Products and sums of shapes stop at this bound rather than overflow: no
// real op comes near 2^62 FLOPs or bytes, only a damaged trace.
constexpr int64_t kBound = int64_t(1) << 62;

int64_t mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out) || out > kBound) return kBound;
  return out;
}
int64_t add(int64_t a, int64_t b) { return std::min(kBound, a + b); }  // both <= kBound: no overflow

int64_t product(const Shape& s, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p = mul(p, s[i]);
  return p;
}

// Bytes per element of a PyTorch type name, integers and flags too (an
// index or a mask is read like any tensor); 0 for what is no tensor.
int64_t type_bytes(std::string_view t) {
  if (int64_t n = element_bytes(dtype_of(t)); n > 0) return n;
  if (t == "long int" || t == "unsigned long int" || t == "c10::complex<float>") return 8;
  if (t == "int" || t == "unsigned int") return 4;
  if (t == "short int" || t == "unsigned short") return 2;
  if (t == "bool") return 1;
  if (t == "c10::complex<double>") return 16;
  return 0;
}

// What every formula reads: the inputs, and the op's element type.
struct Args {
  const OpInputs& in;
  DType dtype = DType::unknown;

  const Shape* shape(size_t i) const { return i < in.dims.size() && !in.dims[i].empty() ? &in.dims[i] : nullptr; }
  std::string_view concrete(size_t i) const { return i < in.concrete.size() ? in.concrete[i] : std::string_view(); }
  int64_t bytes_of(const Shape& s) const { return mul(product(s), element_bytes(dtype)); }
  // Every tensor input, once.
  int64_t input_bytes() const {
    int64_t total = 0;
    for (size_t i = 0; i < in.dims.size() && i < in.types.size(); ++i) {
      if (!in.dims[i].empty()) total = add(total, mul(product(in.dims[i]), type_bytes(in.types[i])));
    }
    return total;
  }
};

// A list of integers as the profiler writes one ("[2, 2]"), or one
// integer ("4"); nullopt for anything else.
std::optional<Shape> integers(std::string_view text) {
  Shape out;
  if (!text.empty() && text.front() == '[') text = text.substr(1, text.size() >= 2 ? text.size() - 2 : 0);
  while (!text.empty()) {
    while (!text.empty() && (text.front() == ' ' || text.front() == ',')) text.remove_prefix(1);
    if (text.empty()) break;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc()) return std::nullopt;
    out.push_back(v);
    text.remove_prefix(size_t(end - text.data()));
  }
  return out;
}

// A list of flags ("[False, True, True]").
std::vector<bool> flags(std::string_view text) {
  std::vector<bool> out;
  for (size_t at = 0; (at = text.find_first_of("TF", at)) != std::string_view::npos; ++at) {
    out.push_back(text[at] == 'T');
  }
  return out;
}

// ---- matmuls ----------------------------------------------------------------

// a [.., m, k] @ b [.., k, n] with `batch` leading dims: 2 m n k per batch.
std::optional<OpCost> matmul(const Args& a, size_t first, size_t rank) {
  const Shape *x = a.shape(first), *y = a.shape(first + 1);
  if (x == nullptr || y == nullptr || x->size() != rank || y->size() != rank) return std::nullopt;
  int64_t m = (*x)[rank - 2], k = (*x)[rank - 1], n = (*y)[rank - 1], batch = rank == 3 ? (*x)[0] : 1;
  if ((*y)[rank - 2] != k || (rank == 3 && (*y)[0] != batch)) return std::nullopt;
  Shape out = rank == 3 ? Shape{batch, m, n} : Shape{m, n};
  return OpCost{.op_class = OpClass::matmul,
                .dtype = a.dtype,
                .flops = mul(mul(mul(mul(batch, m), n), k), 2),
                .bytes = add(a.input_bytes(), a.bytes_of(out))};
}
std::optional<OpCost> mm(const Args& a) { return matmul(a, 0, 2); }
std::optional<OpCost> addmm(const Args& a) { return matmul(a, 1, 2); }
std::optional<OpCost> bmm(const Args& a) { return matmul(a, 0, 3); }
std::optional<OpCost> baddbmm(const Args& a) { return matmul(a, 1, 3); }

// ---- convolutions -----------------------------------------------------------

// torch's conv_flop_count: per position of the output (of the input when
// transposed), the filter times both channel counts of the weight, twice.
int64_t conv_flops(const Shape& x, const Shape& w, const Shape& out, bool transposed) {
  const Shape& positions = transposed ? x : out;
  return mul(mul(mul(mul(mul(product(positions, 2), product(w, 2)), x[0]), w[0]), w[1]), 2);
}

// Where a convolution's arguments are: they differ between its entry points.
struct ConvLayout {
  size_t stride, padding, dilation, transposed, output_padding, groups;  // SIZE_MAX: absent
};
constexpr size_t kAbsent = SIZE_MAX;
constexpr ConvLayout kConvolution{3, 4, 5, 6, 7, 8};         // convolution, _convolution
constexpr ConvLayout kCudnn{3, 2, 4, kAbsent, kAbsent, 5};   // cudnn_convolution
constexpr ConvLayout kMkldnn{4, 3, 5, kAbsent, kAbsent, 6};  // mkldnn_convolution
constexpr ConvLayout kBackward{4, 5, 6, 7, 8, 9};            // convolution_backward (after grad_out)

struct ConvParams {
  Shape stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

std::optional<ConvParams> conv_params(const Args& a, const ConvLayout& at, size_t spatial) {
  auto list = [&](size_t i, int64_t fallback) -> std::optional<Shape> {
    if (i == kAbsent) return Shape(spatial, fallback);
    std::optional<Shape> v = integers(a.concrete(i));
    if (v && v->size() == 1) v = Shape(spatial, v->front());
    if (!v || v->size() != spatial) return std::nullopt;
    return v;
  };
  std::optional<Shape> stride = list(at.stride, 1), padding = list(at.padding, 0), dilation = list(at.dilation, 1),
                       output_padding = list(at.output_padding, 0), groups = list(at.groups, 1);
  if (!stride || !padding || !dilation || !output_padding || !groups || groups->empty()) return std::nullopt;
  return ConvParams{*stride,
                    *padding,
                    *dilation,
                    *output_padding,
                    at.transposed != kAbsent && a.concrete(at.transposed) == "True",
                    groups->front()};
}

// The output's shape (what PyTorch's convolution computes).
std::optional<Shape> conv_output(const Shape& x, const Shape& w, const ConvParams& p) {
  Shape out = {x[0], p.transposed ? mul(w[1], p.groups) : w[0]};
  for (size_t d = 0; d + 2 < x.size(); ++d) {
    int64_t k = mul(p.dilation[d], w[d + 2] - 1);
    int64_t n = p.transposed ? (x[d + 2] - 1) * p.stride[d] - 2 * p.padding[d] + k + p.output_padding[d] + 1
                             : (x[d + 2] + 2 * p.padding[d] - k - 1) / std::max<int64_t>(p.stride[d], 1) + 1;
    if (n <= 0) return std::nullopt;
    out.push_back(n);
  }
  return out;
}

std::optional<OpCost> convolution_with(const Args& a, const ConvLayout& at) {
  const Shape *x = a.shape(0), *w = a.shape(1);
  if (x == nullptr || w == nullptr || x->size() < 3 || w->size() != x->size()) return std::nullopt;
  std::optional<ConvParams> p = conv_params(a, at, x->size() - 2);
  std::optional<Shape> out = p ? conv_output(*x, *w, *p) : std::nullopt;
  if (!out) return std::nullopt;
  return OpCost{.op_class = OpClass::convolution,
                .dtype = a.dtype,
                .flops = conv_flops(*x, *w, *out, p->transposed),
                .bytes = add(a.input_bytes(), a.bytes_of(*out))};
}
std::optional<OpCost> convolution(const Args& a) { return convolution_with(a, kConvolution); }
std::optional<OpCost> cudnn_convolution(const Args& a) { return convolution_with(a, kCudnn); }
std::optional<OpCost> mkldnn_convolution(const Args& a) { return convolution_with(a, kMkldnn); }

// torch's conv_backward_flop: the input's gradient as a transposed
// convolution of the output's gradient, the weight's as a convolution of
// the input by the output's gradient (batch and channels swapped).
std::optional<OpCost> convolution_backward(const Args& a) {
  const Shape *grad_out = a.shape(0), *x = a.shape(1), *w = a.shape(2);
  if (grad_out == nullptr || x == nullptr || w == nullptr || x->size() < 3 || w->size() != x->size() ||
      grad_out->size() != x->size()) {
    return std::nullopt;
  }
  std::optional<ConvParams> p = conv_params(a, kBackward, x->size() - 2);
  std::vector<bool> mask = flags(a.concrete(10));
  if (!p || mask.size() < 2) return std::nullopt;
  auto t = [](Shape s) {
    std::swap(s[0], s[1]);
    return s;
  };
  int64_t flops = 0, bytes = a.input_bytes();
  if (mask[0]) {
    flops = add(flops, conv_flops(*grad_out, *w, *x, !p->transposed));
    bytes = add(bytes, a.bytes_of(*x));
  }
  if (mask[1]) {
    flops = add(flops, p->transposed ? conv_flops(t(*grad_out), t(*x), t(*w), false)
                                     : conv_flops(t(*x), t(*grad_out), t(*w), false));
    bytes = add(bytes, a.bytes_of(*w));
  }
  return OpCost{.op_class = OpClass::convolution, .dtype = a.dtype, .flops = flops, .bytes = bytes};
}

// ---- attention --------------------------------------------------------------

// Query, key and value as [batch, heads, sequence, dim] (`seq_first`:
// [batch, sequence, heads, dim], as the flash and efficient kernels' own
// entry points take them).
struct Qkv {
  int64_t b, h, s_q, s_k, d_q, d_v;
};
std::optional<Qkv> qkv(const Args& a, size_t first, bool seq_first) {
  const Shape *q = a.shape(first), *k = a.shape(first + 1), *v = a.shape(first + 2);
  if (q == nullptr || k == nullptr || v == nullptr || q->size() != 4 || k->size() != 4 || v->size() != 4) {
    return std::nullopt;
  }
  size_t heads = seq_first ? 2 : 1, seq = seq_first ? 1 : 2;
  Qkv out{(*q)[0], (*q)[heads], (*q)[seq], (*k)[seq], (*q)[3], (*v)[3]};
  if ((*k)[3] != out.d_q || (*v)[seq] != out.s_k || (*k)[heads] <= 0 || out.h % (*k)[heads] != 0) return std::nullopt;
  return out;
}

// One batched matmul of [bh, m, k] by [bh, k, n].
int64_t bmm_flops(int64_t bh, int64_t m, int64_t k, int64_t n) { return mul(mul(mul(mul(bh, m), k), n), 2); }

std::optional<OpCost> attention_with(const Args& a, bool seq_first) {
  std::optional<Qkv> x = qkv(a, 0, seq_first);
  if (!x) return std::nullopt;
  int64_t bh = mul(x->b, x->h);
  int64_t flops = add(bmm_flops(bh, x->s_q, x->d_q, x->s_k), bmm_flops(bh, x->s_q, x->s_k, x->d_v));
  Shape out = {x->b, x->h, x->s_q, x->d_v};
  return OpCost{
      .op_class = OpClass::attention, .dtype = a.dtype, .flops = flops, .bytes = add(a.input_bytes(), a.bytes_of(out))};
}
std::optional<OpCost> attention(const Args& a) { return attention_with(a, false); }
std::optional<OpCost> attention_seq_first(const Args& a) { return attention_with(a, true); }

// torch's sdpa_backward_flop_count: the scores recomputed, then four
// matmuls for the gradients of the scores, V, Q and K.
std::optional<OpCost> attention_backward_with(const Args& a, bool seq_first) {
  std::optional<Qkv> x = qkv(a, 1, seq_first);
  if (!x || a.shape(0) == nullptr) return std::nullopt;
  int64_t bh = mul(x->b, x->h);
  int64_t flops = bmm_flops(bh, x->s_q, x->d_q, x->s_k);
  flops = add(flops, bmm_flops(bh, x->s_q, x->d_v, x->s_k));
  flops = add(flops, bmm_flops(bh, x->s_k, x->s_q, x->d_v));
  flops = add(flops, bmm_flops(bh, x->s_q, x->s_k, x->d_q));
  flops = add(flops, bmm_flops(bh, x->d_q, x->s_q, x->s_k));
  int64_t grads = 0;  // dQ, dK, dV: the shapes of Q, K, V
  for (size_t i = 1; i <= 3; ++i) grads = add(grads, a.bytes_of(*a.shape(i)));
  return OpCost{.op_class = OpClass::attention, .dtype = a.dtype, .flops = flops, .bytes = add(a.input_bytes(), grads)};
}
std::optional<OpCost> attention_backward(const Args& a) { return attention_backward_with(a, false); }
std::optional<OpCost> attention_backward_seq_first(const Args& a) { return attention_backward_with(a, true); }

// ---- per element ------------------------------------------------------------

// `per_element` FLOPs for each element of the first input, written out
// in its shape.
std::optional<OpCost> per_element(const Args& a, OpClass c, int64_t per_element) {
  const Shape* x = a.shape(0);
  if (x == nullptr) return std::nullopt;
  return OpCost{.op_class = c,
                .dtype = a.dtype,
                .flops = mul(product(*x), per_element),
                .bytes = add(a.input_bytes(), a.bytes_of(*x))};
}
// DeepSpeed: 5 per element with an affine weight, else 4 (a mean, a
// variance, the normalisation; the scale and shift).
std::optional<OpCost> layer_norm(const Args& a) {
  return per_element(a, OpClass::normalization, a.shape(2) != nullptr ? 5 : 4);
}
// The same count for RMS norm, which has no mean: a square, a sum, the
// scaling, and the weight.
std::optional<OpCost> rms_norm(const Args& a) {
  return per_element(a, OpClass::normalization, a.shape(2) != nullptr ? 4 : 3);
}
std::optional<OpCost> softmax(const Args& a) { return per_element(a, OpClass::softmax, 1); }  // DeepSpeed: 1

// DeepSpeed's elementwise count: one per element of the broadcast output.
std::optional<OpCost> elementwise(const Args& a) {
  Shape out;
  bool any = false;
  for (size_t i = 0; i < a.in.dims.size() && i < 2; ++i) {
    const Shape* s = a.shape(i);
    if (s == nullptr) continue;
    any = true;
    Shape merged(std::max(out.size(), s->size()), 1);
    for (size_t d = 0; d < merged.size(); ++d) {
      int64_t p = d < merged.size() - out.size() ? 1 : out[d - (merged.size() - out.size())];
      int64_t q = d < merged.size() - s->size() ? 1 : (*s)[d - (merged.size() - s->size())];
      merged[d] = std::max(p, q);
    }
    out = merged;
  }
  if (!any) return std::nullopt;
  return OpCost{.op_class = OpClass::elementwise,
                .dtype = a.dtype,
                .flops = product(out),
                .bytes = add(a.input_bytes(), a.bytes_of(out))};
}

struct Formula {
  std::string_view op;
  std::optional<OpCost> (*cost)(const Args&);
};
constexpr std::array kFormulas = {
    Formula{"aten::mm", mm},
    Formula{"aten::addmm", addmm},
    Formula{"aten::bmm", bmm},
    Formula{"aten::baddbmm", baddbmm},
    Formula{"aten::_scaled_mm", mm},
    Formula{"aten::convolution", convolution},
    Formula{"aten::_convolution", convolution},
    Formula{"aten::cudnn_convolution", cudnn_convolution},
    Formula{"aten::mkldnn_convolution", mkldnn_convolution},
    Formula{"aten::convolution_backward", convolution_backward},
    Formula{"aten::_scaled_dot_product_efficient_attention", attention},
    Formula{"aten::_scaled_dot_product_flash_attention", attention},
    Formula{"aten::_scaled_dot_product_flash_attention_for_cpu", attention},
    Formula{"aten::_scaled_dot_product_cudnn_attention", attention},
    Formula{"aten::_flash_attention_forward", attention_seq_first},
    Formula{"aten::_efficient_attention_forward", attention_seq_first},
    Formula{"aten::_scaled_dot_product_efficient_attention_backward", attention_backward},
    Formula{"aten::_scaled_dot_product_flash_attention_backward", attention_backward},
    Formula{"aten::_scaled_dot_product_flash_attention_for_cpu_backward", attention_backward},
    Formula{"aten::_scaled_dot_product_cudnn_attention_backward", attention_backward},
    Formula{"aten::_flash_attention_backward", attention_backward_seq_first},
    Formula{"aten::_efficient_attention_backward", attention_backward_seq_first},
    Formula{"aten::layer_norm", layer_norm},
    Formula{"aten::native_layer_norm", layer_norm},
    Formula{"aten::rms_norm", rms_norm},
    Formula{"aten::_fused_rms_norm", rms_norm},
    Formula{"aten::softmax", softmax},
    Formula{"aten::_softmax", softmax},
    Formula{"aten::log_softmax", softmax},
    Formula{"aten::_log_softmax", softmax},
    Formula{"aten::add", elementwise},
    Formula{"aten::add_", elementwise},
    Formula{"aten::sub", elementwise},
    Formula{"aten::sub_", elementwise},
    Formula{"aten::mul", elementwise},
    Formula{"aten::mul_", elementwise},
    Formula{"aten::div", elementwise},
    Formula{"aten::div_", elementwise},
    Formula{"aten::relu", elementwise},
    Formula{"aten::relu_", elementwise},
    Formula{"aten::gelu", elementwise},
    Formula{"aten::silu", elementwise},
    Formula{"aten::sigmoid", elementwise},
    Formula{"aten::tanh", elementwise},
};

DType first_floating(const OpInputs& in) {
  for (size_t i = 0; i < in.types.size() && i < in.dims.size(); ++i) {
    DType t = dtype_of(in.types[i]);
    if (!in.dims[i].empty() && t != DType::unknown && t != DType::int8 && t != DType::other) return t;
  }
  return DType::unknown;
}

}  // namespace

std::string_view name_of(OpClass c) {
  static constexpr std::array<std::string_view, kOpClasses> names = {"matmul",        "convolution", "attention",
                                                                     "normalization", "softmax",     "elementwise"};
  return size_t(c) < kOpClasses ? names[size_t(c)] : "?";
}

std::string_view name_of(DType t) {
  switch (t) {
    case DType::unknown: return "unknown";
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8: return "fp8";
    case DType::int8: return "int8";
    case DType::other: return "other";
  }
  return "?";
}

DType dtype_of(std::string_view t) {
  if (t == "float") return DType::fp32;
  if (t == "double") return DType::fp64;
  if (t == "c10::BFloat16") return DType::bf16;
  if (t == "c10::Half") return DType::fp16;
  if (t.starts_with("c10::Float8_")) return DType::fp8;
  if (t == "signed char" || t == "unsigned char") return DType::int8;
  if (t.empty() || t == "Scalar" || t == "ScalarList" || t == "TensorList" || t == "GenericList") return DType::unknown;
  return DType::other;  // integers, bool, complex
}

int64_t element_bytes(DType t) {
  switch (t) {
    case DType::fp64: return 8;
    case DType::fp32: return 4;
    case DType::bf16:
    case DType::fp16: return 2;
    case DType::fp8:
    case DType::int8: return 1;
    case DType::unknown:
    case DType::other: return 0;
  }
  return 0;
}

std::optional<OpCost> op_cost(std::string_view name, const OpInputs& inputs) {
  auto it = std::find_if(kFormulas.begin(), kFormulas.end(), [&](const Formula& f) { return f.op == name; });
  if (it == kFormulas.end()) return std::nullopt;
  return it->cost(Args{.in = inputs, .dtype = first_floating(inputs)});
}

}  // namespace loupe::prof
