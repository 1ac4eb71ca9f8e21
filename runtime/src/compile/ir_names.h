// The IR's names that the compiler's passes (fusion, the graph passes,
// lowering) use unqualified.
#pragma once

#include "ir/graph.h"

namespace loupe::rt::compile {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::Op;

}  // namespace loupe::rt::compile
