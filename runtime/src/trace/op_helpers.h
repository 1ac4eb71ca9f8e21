// Helpers shared by the files implementing ops.h.
#pragma once

#include <source_location>
#include <string_view>
#include <vector>

#include "ir/shape_inference.h"
#include "loupe/rt/errors.h"
#include "loupe/rt/ops.h"
#include "trace/array_data.h"
#include "trace/dispatch.h"

namespace loupe::rt::detail {

inline ir::Type type_of(const Array& a) { return {a.shape(), a.dtype()}; }

// The numpy broadcast of two shapes, or a ShapeError naming the op.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view name, const std::vector<ir::Type>& operands,
                       const std::source_location& loc);

// An operand as an array: numbers become host-known constants of `like`'s
// dtype and device (an error if the number does not fit an integer dtype).
Array as_array(const Operand& o, const Array& like, std::string_view name, const std::source_location& loc);

// x broadcast to `shape` (x itself when it already has it).
Array broadcast(const Array& x, const Shape& shape, const std::source_location& loc);

// Axes made non-negative, sorted and unique; empty means all.
std::vector<int64_t> normalize_axes(const std::vector<int>& axes, const Array& x, std::string_view name,
                                    const std::source_location& loc);

Array unary(ir::Op op, std::string_view name, const Array& x, const std::source_location& loc);
Array binary(ir::Op op, std::string_view name, const Operand& a, const Operand& b, const std::source_location& loc);
Array reduce(ir::Op op, std::string_view name, const Array& x, std::vector<int64_t> axes, bool keepdims,
             const std::source_location& loc);

// Sums x down to `shape` (the inverse of broadcasting to x's shape).
Array sum_to(const Array& x, const Shape& shape, const std::source_location& loc);

}  // namespace loupe::rt::detail
