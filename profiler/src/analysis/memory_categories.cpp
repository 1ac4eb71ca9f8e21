#include "analysis/memory_categories.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/memory_blocks.h"

namespace loupe::prof::analysis {

namespace {

// The ops and ranges (not Python frames, not step markers) open at a time
// on the one thread inside an op then, outermost first.
struct OpsAt {
  std::optional<uint32_t> thread;
  bool ambiguous = false;  // several threads were inside ops: whose it was cannot be told
  std::vector<std::string_view> names;
  // When the outermost op (a runtime span: a framework's op, not a range
  // the program or a module marked) ends; 0 when none is open.
  int64_t outer_end = 0;
  int64_t optimizer_end = 0;  // when the Optimizer.step#... range open then ends; 0 when none is
};

OpsAt ops_at(const Context& ctx, int64_t t) {
  OpsAt out;
  OpThread who = op_thread_at(ctx, t);
  out.thread = who.thread;
  out.ambiguous = who.several;
  if (!out.thread) return out;
  const ThreadActivity* th = ctx.thread(*out.thread);
  for (uint32_t i : th->code_spans_at(t)) {
    const std::string& name = ctx.model.str(th->spans->name[i]);
    if (is_python_frame(name) || is_step_marker(name)) continue;
    if (out.outer_end == 0 && th->spans->kind[i] == SpanKind::runtime) out.outer_end = th->spans->end(i);
    if (std::string_view(name).starts_with("Optimizer.step#")) out.optimizer_end = th->spans->end(i);
    out.names.push_back(name);
  }
  return out;
}

bool any_starts_with(const OpsAt& ops, std::string_view prefix) {
  for (std::string_view n : ops.names)
    if (n.starts_with(prefix)) return true;
  return false;
}

bool any_contains(const OpsAt& ops, std::string_view part) {
  for (std::string_view n : ops.names)
    if (n.find(part) != std::string_view::npos) return true;
  return false;
}

// PyTorch's profiler names each backward node's op; loupe's capture ranges
// the whole torch.autograd.backward call.
bool in_backward(const OpsAt& ops) {
  return any_starts_with(ops, "autograd::engine::evaluate_function") ||
         std::find(ops.names.begin(), ops.names.end(), "torch.autograd.backward") != ops.names.end();
}

}  // namespace

BlockCategory categorize(const Context& ctx, int64_t allocated, std::optional<int64_t> freed) {
  // An allocation while no thread was inside an op is outside the backward
  // and the optimizer: that much is known; with several, nothing is.
  OpsAt a = ops_at(ctx, allocated);
  if (a.ambiguous) return BlockCategory::unknown;
  OpsAt f = freed ? ops_at(ctx, *freed) : OpsAt{};
  if (freed && a.outer_end != 0 && f.thread == a.thread && *freed < a.outer_end) return BlockCategory::temporary;
  // A gradient goes to AccumulateGrad, which keeps it as .grad (or adds
  // it to the one there and frees it) until zero_grad sets .grad to None.
  bool handed_on = any_contains(f, "AccumulateGrad") || any_starts_with(f, "Optimizer.zero_grad#");
  if (any_contains(a, "AccumulateGrad") || (in_backward(a) && handed_on)) return BlockCategory::gradient;
  // What one backward node makes and a later one frees (a node's gradient
  // for its inputs) is the backward's working memory, as what the optimizer
  // frees before its step ends is the optimizer's.
  if (freed && f.thread == a.thread && in_backward(a) && in_backward(f)) return BlockCategory::temporary;
  // The optimizer's state lives from one step to the next; what it frees
  // before its step ends is its working memory.
  if (a.optimizer_end != 0) {
    bool kept = !freed || f.thread != a.thread || *freed >= a.optimizer_end;
    return kept ? BlockCategory::optimizer_state : BlockCategory::temporary;
  }
  if (!in_backward(a) && in_backward(f)) return BlockCategory::activation;
  if (any_contains(a, "DataLoader")) return BlockCategory::input;
  return BlockCategory::unknown;
}

std::string_view category_name(BlockCategory c) {
  switch (c) {
    case BlockCategory::activation: return "activation";
    case BlockCategory::temporary: return "temporary";
    case BlockCategory::gradient: return "gradient";
    case BlockCategory::optimizer_state: return "optimizer state";
    case BlockCategory::input: return "input data";
    case BlockCategory::unknown: return "unknown";
  }
  return "unknown";
}

std::string_view category_evidence(BlockCategory c) {
  switch (c) {
    case BlockCategory::activation: return "allocated outside the backward and freed in it";
    case BlockCategory::temporary:
      return "freed before the op (or the optimizer step) that allocated it ended, or allocated and freed inside the "
             "backward";
    case BlockCategory::gradient:
      return "allocated in the backward and freed by AccumulateGrad or Optimizer.zero_grad, or allocated by "
             "AccumulateGrad";
    case BlockCategory::optimizer_state: return "allocated in Optimizer.step and kept past its end";
    case BlockCategory::input: return "allocated while a DataLoader produced a batch";
    case BlockCategory::unknown: return "no evidence of what it was for";
  }
  return "";
}

}  // namespace loupe::prof::analysis
