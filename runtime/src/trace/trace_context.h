// Tracing: while a function runs under a trace (jit compiling it, grad
// differentiating it), every op on arrays appends a node to the trace's
// graph instead of running. Traces nest per thread (grad inside jit); an
// array from outside the current trace (a concrete array the function
// closes over, or a tracer of an enclosing trace) enters it as a constant.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "trace/array_data.h"

namespace loupe::rt::detail {

struct TraceState {
  uint64_t id = 0;
  ir::Graph graph;
  bool active = true;
  Device device;
  std::weak_ptr<TraceState> self;
  std::unordered_map<const ArrayData*, ir::NodeId> captured;
  std::vector<Array> keep;  // captured arrays, alive so that `captured` stays valid
};

// The innermost active trace on this thread, or null (eager).
TraceState* current_trace();

// Makes `trace` current for its lifetime; marks it inactive at the end, so
// that a tracer escaping it (stored in a global, returned through a side
// channel) is reported when used.
class TraceScope {
 public:
  explicit TraceScope(std::shared_ptr<TraceState> trace);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  std::shared_ptr<TraceState> trace_;
};

std::shared_ptr<TraceState> new_trace(Device device);
// A parameter node of `trace` with the given type, as a tracer.
Array add_parameter(const std::shared_ptr<TraceState>& trace, const Shape& shape, Dtype dtype, Device device);
// The node of `a` in `trace`, capturing it if it comes from outside.
ir::NodeId node_in(const std::shared_ptr<TraceState>& trace, const Array& a, const std::source_location& loc);
Array tracer(const std::shared_ptr<TraceState>& trace, ir::NodeId node);
// A node of `d`'s type standing for it in a graph: for a splat, a `full`
// node holding its value (an immediate of the kernels that read it); for
// any other array, a node of op `other` for the caller to complete.
ir::Node operand_node(const ArrayData& d, ir::Op other);

}  // namespace loupe::rt::detail
