#include "backend/cuda/cudnn_attention.h"

// The frontend bundles a copy of nlohmann-json behind the same include
// guard as the system's: the system's, included first, is the one compiled.
#include <nlohmann/json.hpp>
// The frontend's calls into cuDNN go through cudnn_dlhandle (defined here)
// when NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING is set (runtime/CMakeLists.txt).
#include <cudnn_frontend.h>
#include <fmt/format.h>

#include <map>
#include <mutex>
#include <tuple>

#include "backend/dynamic_library.h"
#include "loupe/rt/errors.h"

#ifndef LOUPE_CUDA_LIBRARY_DIR
#define LOUPE_CUDA_LIBRARY_DIR ""
#endif

namespace cudnn_frontend {
// The loaded libcudnn. Set once, before the frontend's first call: the
// frontend looks each cuDNN symbol up on first use and keeps it.
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace loupe::rt::backend::cuda {

namespace fe = cudnn_frontend;
using Graph = fe::graph::Graph;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

namespace {

// The tensors' ids in a graph's variant pack.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

// Loads cuDNN once per process; the reason when it cannot be used.
const std::string& load_error() {
  static const std::string why = [] {
    if (cudnn_switched_off()) return std::string("switched off by LOUPE_CUDNN=0");
    static backend::DynamicLibrary lib;
    std::vector<std::string> names = {"libcudnn.so.9"};
    if (*LOUPE_CUDA_LIBRARY_DIR) names.push_back(std::string(LOUPE_CUDA_LIBRARY_DIR) + "/libcudnn.so.9");
    std::string err;
    if (!lib.open(names, &err)) return "cuDNN 9 cannot be loaded: " + err;
    fe::cudnn_dlhandle = lib.handle();
    try {
      const size_t version = fe::detail::get_backend_version();
      if (version < 90000) return fmt::format("cuDNN {} is older than 9.0", version);
    } catch (const std::exception& e) {
      return std::string("cuDNN cannot be used: ") + e.what();
    }
    return std::string();
  }();
  return why;
}

fe::DataType_t io_type(Dtype d) { return d == Dtype::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF; }

// Every tensor is [batch, 1, rows, width], its rows and their elements
// contiguous (loupe flattens the leading axes into one batch; heads are in
// it). The statistics are [batch, 1, rows, 1], in f32.
void set_layout(fe::graph::Tensor_attributes& t, Uid uid, int64_t batch, int64_t rows, int64_t width) {
  t.set_uid(uid).set_dim({batch, 1, rows, width}).set_stride({rows * width, rows * width, width, 1});
  if (uid == kStats) t.set_data_type(fe::DataType_t::FLOAT);
}

TensorPtr tensor(Graph& g, const char* name, Uid uid, int64_t batch, int64_t rows, int64_t width) {
  fe::graph::Tensor_attributes t;
  t.set_name(name);
  set_layout(t, uid, batch, rows, width);
  return g.tensor(t);
}

void set_output(const TensorPtr& t, Uid uid, int64_t batch, int64_t rows, int64_t width) {
  t->set_output(true);
  set_layout(*t, uid, batch, rows, width);
}

std::shared_ptr<Graph> new_graph(const exec::AttentionKernel& k, int sm) {
  auto g = std::make_shared<Graph>();
  g->set_io_data_type(io_type(k.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  g->set_sm_version(sm);
  return g;
}

// loupe's causal mask aligns its diagonal to the last key (the last query
// sees every key): cuDNN's top-left alignment when there are as many
// queries as keys, its bottom-right one when there are fewer.
template <typename Attributes>
void set_mask(Attributes& a, const exec::AttentionKernel& k) {
  if (!k.causal) return;
  if (k.sq == k.sk) a.set_causal_mask(true);
  else a.set_causal_mask_bottom_right(true);
}

// The forward pass; with the statistics (the rows' log-sum-exp, f32) a
// backward pass needs when `stats`.
std::shared_ptr<Graph> forward_graph(const exec::AttentionKernel& k, bool stats, int sm) {
  auto g = new_graph(k, sm);
  auto q = tensor(*g, "q", kQ, k.batch, k.sq, k.d);
  auto kk = tensor(*g, "k", kK, k.batch, k.sk, k.d);
  auto v = tensor(*g, "v", kV, k.batch, k.sk, k.dv);
  auto attrs = fe::graph::SDPA_attributes().set_name("attention").set_generate_stats(stats).set_attn_scale(k.scale);
  set_mask(attrs, k);
  auto [o, lse] = g->sdpa(q, kk, v, attrs);
  set_output(o, kO, k.batch, k.sq, k.dv);
  if (stats) set_output(lse, kStats, k.batch, k.sq, 1);
  return g;
}

std::shared_ptr<Graph> backward_graph(const exec::AttentionKernel& k, int sm) {
  auto g = new_graph(k, sm);
  auto q = tensor(*g, "q", kQ, k.batch, k.sq, k.d);
  auto kk = tensor(*g, "k", kK, k.batch, k.sk, k.d);
  auto v = tensor(*g, "v", kV, k.batch, k.sk, k.dv);
  auto o = tensor(*g, "o", kO, k.batch, k.sq, k.dv);
  auto d_o = tensor(*g, "do", kDO, k.batch, k.sq, k.dv);
  auto lse = tensor(*g, "stats", kStats, k.batch, k.sq, 1);
  auto attrs = fe::graph::SDPA_backward_attributes().set_name("attention_bwd").set_attn_scale(k.scale);
  set_mask(attrs, k);
  auto [dq, dk, dv] = g->sdpa_backward(q, kk, v, o, d_o, lse, attrs);
  set_output(dq, kDQ, k.batch, k.sq, k.d);
  set_output(dk, kDK, k.batch, k.sk, k.d);
  set_output(dv, kDV, k.batch, k.sk, k.dv);
  return g;
}

// What loupe itself keeps from cuDNN, whatever the GPU.
std::string loupe_rejects(const exec::AttentionKernel& k) {
  if (k.dtype != Dtype::f16 && k.dtype != Dtype::bf16)
    return fmt::format("cuDNN's fused attention takes f16 and bf16, not {}", dtype_name(k.dtype));
  if (k.batch == 0 || k.sq == 0 || k.sk == 0 || k.d == 0 || k.dv == 0) return "an empty attention";
  if (k.causal && k.sq > k.sk)
    return fmt::format("a causal mask with more queries ({}) than keys ({}) leaves rows with no key", k.sq, k.sk);
  return {};
}

std::string validation_error(Graph& g) {
  fe::error_t e = g.validate();
  return e.is_good() ? std::string() : e.get_message();
}

// Bytes rounded up so that what follows in the scratch buffer stays aligned.
size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

std::string cudnn_attention_rejects(const exec::AttentionKernel& k, bool backward, int sm) {
  if (std::string why = loupe_rejects(k); !why.empty()) return why;
  if (const std::string& why = load_error(); !why.empty()) return why;
  try {
    if (std::string why = validation_error(*forward_graph(k, backward, sm)); !why.empty()) return why;
    if (backward) return validation_error(*backward_graph(k, sm));
    return {};
  } catch (const std::exception& e) {
    return std::string("the cuDNN frontend failed: ") + e.what();
  }
}

// ---- on a GPU ------------------------------------------------------------------

struct CudnnAttention::Plan {
  exec::AttentionKernel k;
  std::shared_ptr<Graph> forward;   // with statistics when there is a backward
  std::shared_ptr<Graph> backward;  // null for a forward pass
  // The scratch buffer: the statistics and the recomputed output (for a
  // backward pass), then the workspace both graphs share.
  size_t o_at = 0, workspace_at = 0, scratch = 0;  // the statistics at 0
};

struct CudnnAttention::State {
  int sm = 0;
  cudnnHandle_t handle = nullptr;
  std::mutex mu;  // held while the handle builds or runs a plan
  using Key = std::tuple<Dtype, int64_t, int64_t, int64_t, int64_t, int64_t, bool, float, bool>;
  std::map<Key, std::shared_ptr<const Plan>> plans;
  std::map<Key, std::string> refused;
};

CudnnAttention::CudnnAttention(int sm) : state_(std::make_unique<State>()) {
  if (const std::string& why = load_error(); !why.empty()) throw RuntimeError(why);
  state_->sm = sm;
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  try {
    s = fe::detail::create_handle(&state_->handle);
  } catch (const std::exception& e) {
    throw RuntimeError(std::string("cudnnCreate failed: ") + e.what());
  }
  if (s != CUDNN_STATUS_SUCCESS)
    throw RuntimeError(std::string("cudnnCreate failed: ") + fe::detail::get_error_string(s));
}

CudnnAttention::~CudnnAttention() {
  if (state_->handle != nullptr) fe::detail::destroy_handle(state_->handle);
}

namespace {

// Builds `g`'s plans on the GPU; the reason when cuDNN has none for it.
std::string build(Graph& g, cudnnHandle_t handle, int64_t* workspace) {
  fe::error_t e = g.build(handle, {fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
  if (e.is_bad()) return e.get_message();
  e = g.get_workspace_size(*workspace);
  return e.is_good() ? std::string() : e.get_message();
}

}  // namespace

std::shared_ptr<CudnnAttention::Plan> CudnnAttention::build_plan(const exec::AttentionKernel& k, bool backward,
                                                                 std::string* why) {
  auto p = std::make_shared<Plan>();
  p->k = k;
  try {
    int64_t fwd_ws = 0, bwd_ws = 0;
    p->forward = forward_graph(k, backward, state_->sm);
    *why = build(*p->forward, state_->handle, &fwd_ws);
    if (why->empty() && backward) {
      p->backward = backward_graph(k, state_->sm);
      *why = build(*p->backward, state_->handle, &bwd_ws);
    }
    if (!why->empty()) return nullptr;
    if (backward) {
      p->o_at = aligned(size_t(k.batch * k.sq) * 4);  // the statistics come first
      p->workspace_at = p->o_at + aligned(size_t(k.batch * k.sq * k.dv) * itemsize(k.dtype));
    }
    p->scratch = p->workspace_at + size_t(std::max(fwd_ws, bwd_ws));
    return p;
  } catch (const std::exception& e) {
    *why = std::string("the cuDNN frontend failed: ") + e.what();
    return nullptr;
  }
}

std::shared_ptr<const CudnnAttention::Plan> CudnnAttention::plan(const exec::AttentionKernel& k, bool backward,
                                                                 std::string* why) {
  const State::Key key{k.dtype, k.batch, k.sq, k.sk, k.d, k.dv, k.causal, k.scale, backward};
  std::lock_guard lock(state_->mu);
  if (auto it = state_->plans.find(key); it != state_->plans.end()) return it->second;
  if (auto it = state_->refused.find(key); it != state_->refused.end()) {
    *why = it->second;
    return nullptr;
  }
  std::string reason = loupe_rejects(k);
  auto p = reason.empty() ? build_plan(k, backward, &reason) : nullptr;
  if (!p) {
    state_->refused.emplace(key, reason);
    *why = reason;
    return nullptr;
  }
  state_->plans.emplace(key, p);
  return p;
}

size_t CudnnAttention::scratch_bytes(const Plan& p) { return p.scratch; }

void CudnnAttention::run(const Plan& p, const std::vector<void*>& buffers, cudaStream_t stream) {
  // One thread at a time on the handle, whether it runs or builds a plan.
  std::lock_guard lock(state_->mu);
  try {
    execute(p, buffers, stream);
  } catch (const RuntimeError&) {
    throw;
  } catch (const std::exception& e) {  // the frontend's own (a symbol missing from cuDNN)
    throw RuntimeError(std::string("cuDNN attention failed: ") + e.what());
  }
}

void CudnnAttention::execute(const Plan& p, const std::vector<void*>& buffers, cudaStream_t stream) {
  auto fail = [](const std::string& what) { throw RuntimeError("cuDNN attention failed: " + what); };
  if (cudnnStatus_t s = fe::detail::set_stream(state_->handle, stream); s != CUDNN_STATUS_SUCCESS)
    fail(fe::detail::get_error_string(s));
  const exec::AttentionKernel& k = p.k;
  char* scratch = p.scratch > 0 ? static_cast<char*>(buffers.back()) : nullptr;
  void* workspace = scratch != nullptr ? scratch + p.workspace_at : nullptr;
  if (!p.backward) {
    std::unordered_map<int64_t, void*> pack{{kQ, buffers[0]}, {kK, buffers[1]}, {kV, buffers[2]}, {kO, buffers[3]}};
    if (fe::error_t e = p.forward->execute(state_->handle, pack, workspace); e.is_bad()) fail(e.get_message());
    return;
  }
  // The forward again, for the statistics (and an output consistent with
  // them); then the gradients into the packed output dq | dk | dv.
  void* stats = scratch;
  void* o = scratch + p.o_at;
  std::unordered_map<int64_t, void*> fwd{
      {kQ, buffers[0]}, {kK, buffers[1]}, {kV, buffers[2]}, {kO, o}, {kStats, stats}};
  if (fe::error_t e = p.forward->execute(state_->handle, fwd, workspace); e.is_bad()) fail(e.get_message());
  const size_t isz = itemsize(k.dtype);
  char* packed = static_cast<char*>(buffers[5]);
  char* dk = packed + size_t(k.batch * k.sq * k.d) * isz;
  char* dv = dk + size_t(k.batch * k.sk * k.d) * isz;
  std::unordered_map<int64_t, void*> bwd{{kQ, buffers[0]}, {kK, buffers[1]},  {kV, buffers[2]},
                                         {kO, o},          {kDO, buffers[4]}, {kStats, stats},
                                         {kDQ, packed},    {kDK, dk},         {kDV, dv}};
  if (fe::error_t e = p.backward->execute(state_->handle, bwd, workspace); e.is_bad()) fail(e.get_message());
}

}  // namespace loupe::rt::backend::cuda
