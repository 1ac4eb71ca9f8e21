// The result type of each primitive, and the errors users see when an op's
// operands do not fit: raised at trace time (or eagerly, before anything
// runs) naming the op, the operands' types and the user's line.
#pragma once

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace loupe::rt::ir {

struct Type {
  Shape shape;
  Dtype dtype = Dtype::f32;
};

// `name` is the op as the user called it ("matmul", "add"), which may
// differ from the primitive (operator+ is add; softmax is several).
Type infer(Op op, const std::vector<Type>& in, const Attrs& attrs, std::string_view name,
           const std::source_location& loc);

// Raises ShapeError: "matmul(f32[32,784], f32[128,10]) at mlp.cpp:42:
// contracting axes differ (784 vs 128)".
[[noreturn]] void fail(std::string_view name, const std::vector<Type>& in, const std::string& problem,
                       const std::source_location& loc);

// An axis in [-rank, rank) made non-negative, or a ShapeError.
int64_t normalize_axis(int64_t axis, size_t rank, std::string_view name, const std::vector<Type>& in,
                       const std::source_location& loc);

}  // namespace loupe::rt::ir
