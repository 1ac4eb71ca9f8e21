// Fused attention's throughput on the default device (scripts/gpu-check runs
// it on the GPU, with LOUPE_CUDNN=0 for loupe's own kernel and without for
// cuDNN's): the forward pass alone, and the forward and backward passes of
// a training step, each timed over enough calls to last about a second.
// Prints one JSON object, with which kernel ran (the compile's words).
//
//   attention_bench [--batch B] [--heads H] [--seq S] [--dim D]
//                   [--dtype bf16|f16|f32] [--causal]
//
// TFLOPS count FlashAttention's convention: a forward pass is two products
// of 2·S·S·D each per head (4·B·H·S²·D), a backward pass five (2.5 times the
// forward), halved under a causal mask; the softmax is not counted.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loupe/rt/runtime.h"

namespace rt = loupe::rt;
using rt::Array;
using V = std::vector<Array>;

namespace {

struct Options {
  int64_t batch = 2, heads = 16, seq = 4096, dim = 128;
  rt::Dtype dtype = rt::bf16;
  bool causal = false;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--causal") o->causal = true;
    else if ((a == "--batch" || a == "--heads" || a == "--seq" || a == "--dim") && (v = value())) {
      int64_t n = std::atoll(v);
      if (n <= 0) return false;
      (a == "--batch" ? o->batch : a == "--heads" ? o->heads : a == "--seq" ? o->seq : o->dim) = n;
    } else if (a == "--dtype" && (v = value())) {
      std::string d = v;
      if (d == "bf16") o->dtype = rt::bf16;
      else if (d == "f16") o->dtype = rt::f16;
      else if (d == "f32") o->dtype = rt::f32;
      else return false;
    } else {
      return false;
    }
  }
  return true;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Milliseconds per call of `call`, which returns what to wait on: calls
// queued back to back, enough of them to take about a second.
template <typename F>
double time_per_call(F call) {
  call().block_until_ready();  // compiles
  double t0 = now_ms();
  call().block_until_ready();
  const double one = std::max(now_ms() - t0, 1e-3);
  const int n = int(std::clamp(1000.0 / one, 3.0, 200.0));
  t0 = now_ms();
  Array last;
  for (int i = 0; i < n; ++i) last = call();
  last.block_until_ready();
  return (now_ms() - t0) / n;
}

// The compile's account of who ran attention: "cuDNN" when cuDNN ran every
// attention kernel, else "loupe" and cuDNN's reason.
std::pair<std::string, std::string> who_ran(const std::string& ir) {
  std::string why;
  const std::string fallback = "attention on loupe's kernel: ";
  if (size_t at = ir.find(fallback); at != std::string::npos) {
    size_t end = ir.find('\n', at);
    why = ir.substr(at + fallback.size(), end == std::string::npos ? std::string::npos : end - at - fallback.size());
  }
  bool cudnn = ir.find(" cuDNN\n") != std::string::npos && ir.find(", 0 cuDNN") == std::string::npos;
  return {cudnn && why.empty() ? "cuDNN" : "loupe", why};
}

std::string json_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\t') ? ' ' : c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: attention_bench [--batch B] [--heads H] [--seq S] [--dim D] [--dtype bf16|f16|f32] "
                 "[--causal]\n");
    return 2;
  }
  try {
    rt::Device dev = rt::default_device();
    const rt::Shape shape{o.batch, o.heads, o.seq, o.dim};
    Array q = rt::random::normal(rt::random::key(1, dev), shape).astype(o.dtype);
    Array k = rt::random::normal(rt::random::key(2, dev), shape).astype(o.dtype);
    Array v = rt::random::normal(rt::random::key(3, dev), shape).astype(o.dtype);
    Array w = rt::random::normal(rt::random::key(4, dev), shape);
    const bool causal = o.causal;
    auto forward = rt::jit("attention_forward", [causal](Array a, Array b, Array c) {
      return rt::attention(a, b, c, causal, rt::AttentionImpl::fused);
    });
    auto loss = [causal](V x, Array weight) {
      return rt::sum(rt::attention(x[0], x[1], x[2], causal, rt::AttentionImpl::fused).astype(rt::f32) * weight);
    };
    auto train = rt::jit("attention_train", [&](V x, Array weight) { return rt::value_and_grad(loss)(x, weight); });

    const double fwd_ms = time_per_call([&] { return forward(q, k, v); });
    const double train_ms = time_per_call([&] { return train(V{q, k, v}, w).second[0]; });
    const double fwd_flop =
        4.0 * double(o.batch * o.heads) * double(o.seq) * double(o.seq) * double(o.dim) * (o.causal ? 0.5 : 1.0);
    auto [fwd_by, fwd_why] = who_ran(forward.stats().last_ir);
    auto [train_by, train_why] = who_ran(train.stats().last_ir);
    std::printf("%s\n",
                fmt::format(R"({{"device": "{}", "dtype": "{}", "batch": {}, "heads": {}, "seq": {}, "dim": {}, )"
                            R"("causal": {}, "forward_ms": {:.4f}, "forward_tflops": {:.2f}, "forward_by": "{}", )"
                            R"("train_ms": {:.4f}, "train_tflops": {:.2f}, "train_by": "{}", "why_not_cudnn": "{}"}})",
                            dev.str(), rt::dtype_name(o.dtype), o.batch, o.heads, o.seq, o.dim,
                            o.causal ? "true" : "false", fwd_ms, fwd_flop / fwd_ms / 1e9, fwd_by, train_ms,
                            3.5 * fwd_flop / train_ms / 1e9, train_by, json_text(fwd_why.empty() ? train_why : fwd_why))
                    .c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attention_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
