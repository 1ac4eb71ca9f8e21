// Graph-to-graph passes run on a traced function before lowering. Each
// keeps the parameters (the executable's interface) and the outputs, and
// returns a new graph in topological order.
#pragma once

#include "ir/graph.h"

namespace loupe::rt::compile {

// Removes nodes no output depends on.
ir::Graph eliminate_dead_code(const ir::Graph& g);
// Merges nodes computing the same op on the same operands.
ir::Graph eliminate_common_subexpressions(const ir::Graph& g);
// Evaluates ops on constants at compile time and simplifies: x*1, x+0,
// views of constants, double negation, nested transposes and reshapes,
// stop_gradient (meaningless after differentiation), and transposes of a
// matmul's operands (folded into the matmul as BLAS transpose flags).
ir::Graph fold_constants(const ir::Graph& g);

}  // namespace loupe::rt::compile
