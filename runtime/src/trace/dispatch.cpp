#include "trace/dispatch.h"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "compile/executable.h"
#include "exec/callsite_cache.h"
#include "exec/nvtx.h"
#include "ir/shape_inference.h"
#include "loupe/rt/errors.h"
#include "trace/trace_context.h"

namespace loupe::rt::detail {

namespace {

// ---- Eager execution: a one-node graph lowered once per (op, attributes,
// operand types) and cached, so that repeating an op costs a lookup.

void append(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }
template <typename T>
void append(std::string& key, const T& v) {
  append(key, &v, sizeof(T));
}
void append(std::string& key, const std::vector<int64_t>& v) {
  append(key, v.size());
  if (!v.empty()) append(key, v.data(), v.size() * sizeof(int64_t));
}

std::string eager_key(ir::Op op, const std::vector<Array>& inputs, const ir::Attrs& a) {
  std::string key;
  key.reserve(128);
  append(key, op);
  append(key, a.shape);
  append(key, a.dtype);
  append(key, a.axes);
  append(key, a.starts);
  append(key, a.stops);
  append(key, a.steps);
  append(key, a.value);
  append(key, a.axis);
  append(key, uint8_t(a.keepdims | a.causal << 1 | a.transpose_a << 2 | a.transpose_b << 3));
  for (const Array& in : inputs) {
    const ArrayData& d = *in.data();
    append(key, d.dtype);
    append(key, d.shape);
    append(key, d.splat);
    if (d.splat) append(key, d.value);
  }
  return key;
}

struct EagerCache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<compile::Executable>> map;
};
EagerCache& eager_cache() {
  static EagerCache* c = new EagerCache;
  return *c;
}

std::shared_ptr<compile::Executable> eager_executable(ir::Op op, const std::vector<Array>& inputs,
                                                      const ir::Attrs& attrs, const ir::Type& out) {
  std::string key = eager_key(op, inputs, attrs);
  EagerCache& c = eager_cache();
  {
    std::lock_guard lock(c.mu);
    auto it = c.map.find(key);
    if (it != c.map.end()) return it->second;
  }
  ir::Graph g;
  ir::Node n;
  n.op = op;
  n.attrs = attrs;
  n.shape = out.shape;
  n.dtype = out.dtype;
  for (const Array& in : inputs) {
    const ArrayData& d = *in.data();
    // Scalar operands become immediates of the kernel.
    ir::Node p = operand_node(d, ir::Op::parameter);
    if (!d.splat) p.param = int(g.params.size());
    ir::NodeId id = g.add(std::move(p));
    if (!d.splat) g.params.push_back(id);
    n.inputs.push_back(id);
  }
  g.outputs.push_back(g.add(std::move(n)));
  auto exe = compile::lower(g, true);
  std::lock_guard lock(c.mu);
  if (c.map.size() > 4096) c.map.clear();  // bounded: shapes that never repeat
  c.map.emplace(std::move(key), exe);
  return exe;
}

const char* eager_span_name(ir::Op op) {
  static const char** names = [] {
    auto** t = new const char*[ir::kOpCount];
    for (int i = 0; i < ir::kOpCount; ++i) t[i] = prof::intern(fmt::format("eager {}", ir::op_name(ir::Op(i))));
    return t;
  }();
  return names[int(op)];
}

double cast_value(double v, Dtype to) {
  switch (to) {
    case Dtype::i32: return double(int32_t(int64_t(v)));
    case Dtype::i64: return double(int64_t(v));
    case Dtype::boolean: return v != 0 ? 1.0 : 0.0;
    case Dtype::f32:
    case Dtype::f16:
    case Dtype::bf16: break;
  }
  return double(float(v));
}

Array eager(ir::Op op, const std::vector<Array>& inputs, const ir::Attrs& attrs, const ir::Type& out,
            const std::source_location& loc, Device device) {
  // Views of host-known constants stay constants: no kernel.
  if (!inputs.empty() && inputs[0].data()->splat &&
      (op == ir::Op::broadcast_to || op == ir::Op::reshape || op == ir::Op::transpose || op == ir::Op::slice ||
       op == ir::Op::stop_gradient || op == ir::Op::cast)) {
    const ArrayData& d = *inputs[0].data();
    return splat(out.shape, op == ir::Op::cast ? cast_value(d.value, out.dtype) : d.value, out.dtype, d.device);
  }
  // Aliases share their operand's buffer.
  if (op == ir::Op::reshape || op == ir::Op::stop_gradient) {
    const ArrayData& d = *inputs[0].data();
    buffer_of(inputs[0], ir::op_name(op), loc);
    return Array(make_concrete(out.shape, out.dtype, d.device, d.buffer, d.ready));
  }
  // The user's line, so that a trace shows where each eager op came from.
  exec::Phase phase(eager_span_name(op), prof::SpanKind::runtime, exec::site_of(loc));
  auto exe = eager_executable(op, inputs, attrs, out);
  std::vector<Array> params;
  params.reserve(inputs.size());
  for (const Array& in : inputs)
    if (!in.data()->splat) params.push_back(in);
  return compile::run(*exe, params, device, &loc)[0];
}

}  // namespace

Array run_eager(ir::Op op, const std::vector<Array>& inputs, ir::Attrs attrs, std::string_view name,
                const std::source_location& loc, Device device) {
  std::vector<ir::Type> types;
  for (const Array& in : inputs) types.push_back({in.shape(), in.dtype()});
  ir::Type out = ir::infer(op, types, attrs, name, loc);
  return eager(op, inputs, attrs, out, loc, device);
}

Array apply(ir::Op op, const std::vector<Array>& inputs, ir::Attrs attrs, std::string_view name,
            const std::source_location& loc, Device device) {
  std::vector<ir::Type> types;
  types.reserve(inputs.size());
  for (const Array& in : inputs) {
    if (!in.valid()) throw RuntimeError(fmt::format("{} at {}: an operand is a null Array", name, ir::format_loc(loc)));
    types.push_back({in.shape(), in.dtype()});
  }
  ir::Type out = ir::infer(op, types, attrs, name, loc);

  if (TraceState* t = current_trace()) {
    std::shared_ptr<TraceState> trace;
    // The handle of the current trace: take it from an operand when one is
    // its tracer, else the trace keeps one to itself (see TraceScope).
    for (const Array& in : inputs)
      if (in.data()->trace.get() == t) trace = in.data()->trace;
    if (!trace) trace = t->self.lock();
    ir::Node n;
    n.op = op;
    n.shape = out.shape;
    n.dtype = out.dtype;
    n.attrs = std::move(attrs);
    n.loc = loc;
    for (const Array& in : inputs) n.inputs.push_back(node_in(trace, in, loc));
    return tracer(trace, trace->graph.add(std::move(n)));
  }

  // Eager: every operand must hold (or be able to hold) a value, on one device.
  bool placed = false;
  for (const Array& in : inputs) {
    const ArrayData& d = *in.data();
    if (d.is_tracer() || d.abstract) not_concrete(d, name, loc);
    if (d.splat) continue;
    if (placed && d.device != device)
      throw RuntimeError(
          fmt::format("{} at {}: operands are on different devices ({} and {}); move one with "
                      "to_device()",
                      name, ir::format_loc(loc), device.str(), d.device.str()));
    device = d.device;
    placed = true;
  }
  if (!placed && !inputs.empty()) device = inputs[0].data()->device;
  return eager(op, inputs, attrs, out, loc, device);
}

}  // namespace loupe::rt::detail
