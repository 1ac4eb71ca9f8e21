// What a collective kernel does (all-reduce, all-gather, all-to-all, ...),
// which decides how its time can be hidden. The call that launched it says
// so first: PyTorch wraps each collective in a `nccl:all_reduce` range and a
// `c10d::allreduce_` op, and a kernel's name can hide it (NCCL 2.19 on runs
// every collective in `ncclDevKernel_Generic`; a post-processed trace may
// rename kernels). The kernel's name (`ncclKernel_AllReduce_...`) is the
// fallback.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "analysis/context.h"

namespace loupe::prof::analysis {

enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast, reduce, unnamed };
constexpr size_t kCollectiveOps = 8;

// "all-reduce", "send/recv", ...; "unnamed" when neither its call nor its
// kernel says.
std::string_view name_of(CollectiveOp op);

// A collective kernel as its launch shows it: the operation (its launching
// call's if a recorded range encloses the launch, else its kernel name's),
// whether PyTorch's autograd engine launched it, in the backward pass
// (an `autograd::engine::evaluate_function` span encloses the launch), as
// DDP's gradient hooks do, and the outermost range the program marked
// around the launch ("## forward ##", "## sparse_data_dist ##",
// "DistributedDataParallel.forward"; not a step marker or a Python frame):
// the part of the step that issued it.
struct CollectiveLaunch {
  CollectiveOp op = CollectiveOp::unnamed;
  bool in_backward = false;
  bool launched = false;          // the trace holds its launch
  std::optional<StringId> range;  // none: no range encloses the launch
};
CollectiveLaunch collective_launch_of(const Context& ctx, const DeviceOps& s, size_t i);

// Whether a host span is the call a framework records around a collective
// ("nccl:all_reduce", "c10d::allreduce_"): host time spent issuing it.
bool is_collective_call(std::string_view name);

}  // namespace loupe::prof::analysis
