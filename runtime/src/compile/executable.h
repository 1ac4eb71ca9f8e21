// An executable: what a compile produces and a call runs. A list of kernel
// launches over numbered buffer slots (the function's inputs, captured
// constants, and temporaries the executable allocates), with the point
// after which each temporary is released, planned at compile time.
#pragma once

#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "exec/kernel_spec.h"
#include "ir/graph.h"
#include "loupe/prof/record.h"
#include "loupe/rt/array.h"

namespace loupe::rt::compile {

struct Executable {
  struct Slot {
    enum class Kind : uint8_t { input, constant, temp };
    Kind kind = Kind::temp;
    int input = -1;  // Kind::input: the position among the inputs
    Array constant;  // Kind::constant
    int64_t bytes = 0;
    // Who allocates a temporary: the user's line that created the op.
    const char* op = "";
    std::source_location loc;
    prof::CallSiteId site = prof::kNoCallSite;
  };
  struct Step {
    std::shared_ptr<const exec::KernelSpec> spec;
    std::vector<int> slots;    // inputs then outputs
    int outputs = 0;           // the last `outputs` entries are written
    std::vector<int> release;  // temporaries last read here
  };
  struct Output {
    int slot = 0;
    Shape shape;
    Dtype dtype = Dtype::f32;
  };

  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<Output> outputs;
  size_t inputs = 0;
  uint32_t nodes = 0;
  int64_t planned_peak = 0;  // most temporary bytes live at once
  std::string text;          // the kernels, for the compile event's IR
};

struct LowerStats {
  int64_t fusion_ns = 0;  // time spent forming the fused groups
};

// Lowers an (optimised) graph to kernels: elementwise chains and the
// reductions consuming them become one fused kernel each when `fuse`.
std::shared_ptr<Executable> lower(const ir::Graph& graph, bool fuse, LowerStats* stats = nullptr);

// Queues the executable's kernels on `device`'s compute stream and returns
// its outputs (pending). `eager_loc`, for an op run eagerly, is the user's
// line to charge the allocations to.
std::vector<Array> run(const Executable& exe, const std::vector<Array>& inputs, Device device,
                       const std::source_location* eager_loc = nullptr);

}  // namespace loupe::rt::compile
