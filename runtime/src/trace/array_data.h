// What an Array handle points to. One of four kinds:
//  - concrete: a device buffer, and the event after which it holds the value;
//  - splat: a constant known on the host (a scalar operand, broadcast),
//    given a buffer only if a kernel needs one;
//  - tracer: a node of a graph being traced (jit, grad);
//  - abstract: a shape and dtype with no value (rt::spec, for compile_for).
#pragma once

#include <memory>
#include <mutex>
#include <string_view>

#include "exec/buffer.h"
#include "exec/stream.h"
#include "ir/graph.h"
#include "loupe/rt/array.h"

namespace loupe::rt::detail {

struct TraceState;

struct ArrayData {
  Shape shape;
  Dtype dtype = Dtype::f32;
  Device device;

  std::shared_ptr<exec::Buffer> buffer;
  exec::Event ready;

  bool splat = false;
  double value = 0;

  std::shared_ptr<TraceState> trace;
  ir::NodeId node = -1;

  bool abstract = false;

  bool is_tracer() const { return trace != nullptr; }
};

std::shared_ptr<ArrayData> make_concrete(Shape shape, Dtype dtype, Device device, std::shared_ptr<exec::Buffer> buffer,
                                         exec::Event ready);
// A host-known constant: no kernel runs until something needs its buffer.
Array splat(const Shape& shape, double value, Dtype dtype, Device device);

// The buffer of a concrete or splat array (materialising a splat with a
// fill kernel); raises RuntimeError for tracers and abstract arrays, naming
// `what` and `loc`.
const std::shared_ptr<exec::Buffer>& buffer_of(const Array& a, std::string_view what, const std::source_location& loc);

// Raises the error for using a tracer or abstract array where a value is
// needed.
[[noreturn]] void not_concrete(const ArrayData& d, std::string_view what, const std::source_location& loc);

}  // namespace loupe::rt::detail
