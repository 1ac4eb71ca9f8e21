// The compiler pipeline: optimisation passes over a traced graph, then
// lowering to an executable, each phase timed and recorded.
#pragma once

#include <memory>
#include <string>

#include "compile/executable.h"
#include "ir/graph.h"
#include "loupe/rt/jit.h"

namespace loupe::rt::compile {

struct Compiled {
  std::shared_ptr<Executable> exe;
  std::string ir;  // the optimised graph, the passes' effect and the kernels
  int64_t optimize_ns = 0, codegen_ns = 0;
  uint32_t nodes = 0, kernels = 0;
};

// Optimises and lowers `graph`, then has `device` make the kernels ready
// (CUDA: NVRTC), all of it timed.
Compiled compile_graph(ir::Graph graph, const std::string& name, const JitOptions& options, Device device);

}  // namespace loupe::rt::compile
