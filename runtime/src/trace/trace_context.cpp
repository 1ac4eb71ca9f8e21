#include "trace/trace_context.h"

#include <fmt/format.h>

#include <atomic>

#include "loupe/rt/errors.h"

namespace loupe::rt::detail {

namespace {
thread_local std::vector<TraceState*> t_traces;
std::atomic<uint64_t> g_trace_ids{0};
}  // namespace

TraceState* current_trace() { return t_traces.empty() ? nullptr : t_traces.back(); }

TraceScope::TraceScope(std::shared_ptr<TraceState> trace) : trace_(std::move(trace)) {
  t_traces.push_back(trace_.get());
}

TraceScope::~TraceScope() {
  trace_->active = false;
  t_traces.pop_back();
}

std::shared_ptr<TraceState> new_trace(Device device) {
  auto t = std::make_shared<TraceState>();
  t->id = ++g_trace_ids;
  t->device = device;
  t->self = t;
  return t;
}

Array tracer(const std::shared_ptr<TraceState>& trace, ir::NodeId node) {
  auto d = std::make_shared<ArrayData>();
  const ir::Node& n = trace->graph[node];
  d->shape = n.shape;
  d->dtype = n.dtype;
  d->device = trace->device;
  d->trace = trace;
  d->node = node;
  return Array(std::move(d));
}

Array add_parameter(const std::shared_ptr<TraceState>& trace, const Shape& shape, Dtype dtype, Device device) {
  ir::Node n;
  n.op = ir::Op::parameter;
  n.shape = shape;
  n.dtype = dtype;
  n.param = int(trace->graph.params.size());
  ir::NodeId id = trace->graph.add(std::move(n));
  trace->graph.params.push_back(id);
  Array a = tracer(trace, id);
  a.data()->device = device;
  return a;
}

ir::Node operand_node(const ArrayData& d, ir::Op other) {
  ir::Node n;
  n.shape = d.shape;
  n.dtype = d.dtype;
  n.op = d.splat ? ir::Op::full : other;
  if (d.splat) {
    n.attrs.shape = d.shape;
    n.attrs.dtype = d.dtype;
    n.attrs.value = d.value;
  }
  return n;
}

ir::NodeId node_in(const std::shared_ptr<TraceState>& trace, const Array& a, const std::source_location& loc) {
  if (!a.valid()) throw RuntimeError(fmt::format("a null Array was used at {}", ir::format_loc(loc)));
  ArrayData& d = *a.data();
  if (d.trace.get() == trace.get()) return d.node;
  auto it = trace->captured.find(&d);
  if (it != trace->captured.end()) return it->second;
  if (d.abstract) not_concrete(d, "traced", loc);
  if (d.is_tracer() && !d.trace->active) not_concrete(d, "traced", loc);
  ir::Node n = operand_node(d, ir::Op::constant);
  n.loc = loc;
  if (!d.splat) n.constant = a;
  ir::NodeId id = trace->graph.add(std::move(n));
  trace->captured.emplace(&d, id);
  trace->keep.push_back(a);
  return id;
}

}  // namespace loupe::rt::detail
