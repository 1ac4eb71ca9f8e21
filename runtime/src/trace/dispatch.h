// Applying a primitive: the one path every op takes. It infers the result's
// type (raising ShapeError for bad operands), then either appends a node to
// the current trace or, outside any trace, runs the op at once as one small
// kernel on the operands' device (eager mode).
#pragma once

#include <source_location>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "loupe/rt/array.h"

namespace loupe::rt::detail {

// `name` is the op as the user called it, for errors. `device` places ops
// without array operands (full, iota); others run where their operands are.
Array apply(ir::Op op, const std::vector<Array>& inputs, ir::Attrs attrs, std::string_view name,
            const std::source_location& loc, Device device = default_device());

}  // namespace loupe::rt::detail

namespace loupe::rt::detail {
// Runs an op eagerly even while a trace is active (materialising a
// constant's buffer).
Array run_eager(ir::Op op, const std::vector<Array>& inputs, ir::Attrs attrs, std::string_view name,
                const std::source_location& loc, Device device);
}  // namespace loupe::rt::detail
