// Reverse-mode rules: for a node y = op(x...), the cotangents of its
// operands given the cotangent g of y. Rules are written with the public
// ops, so they trace (inside jit) or run (eagerly) like any other code,
// and their nodes carry the forward node's line.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "loupe/rt/array.h"

namespace loupe::rt::autodiff {

// One entry per operand; a null Array where no gradient flows.
std::vector<Array> vjp(const ir::Node& node, const std::vector<Array>& inputs, const Array& output, const Array& g);

}  // namespace loupe::rt::autodiff
