#include "analysis/collective_op.h"

#include <array>
#include <cctype>
#include <initializer_list>
#include <string>
#include <vector>

namespace loupe::prof::analysis {

namespace {

// Lower case without separators: "_all_gather_base_" and "AllGather" both
// read "allgatherbase"/"allgather".
std::string folded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c != '_' && c != '-' && c != ' ') out.push_back(char(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// The collective that s names, its words tried in order: "allreduce" and
// "reducescatter" hold "reduce", so they come before it.
CollectiveOp op_in_words(std::string_view s) {
  struct Word {
    std::string_view text;
    CollectiveOp op;
  };
  static constexpr std::array<Word, 8> kWords = {{{"allreduce", CollectiveOp::all_reduce},
                                                  {"reducescatter", CollectiveOp::reduce_scatter},
                                                  {"allgather", CollectiveOp::all_gather},
                                                  {"alltoall", CollectiveOp::all_to_all},
                                                  {"send", CollectiveOp::send_recv},
                                                  {"recv", CollectiveOp::send_recv},
                                                  {"broadcast", CollectiveOp::broadcast},
                                                  {"reduce", CollectiveOp::reduce}}};
  const std::string f = folded(s);
  for (const Word& w : kWords) {
    if (f.find(w.text) != std::string::npos) return w.op;
  }
  return CollectiveOp::unnamed;
}

// Removes the first of the prefixes that s starts with; false if none.
bool strip_prefix(std::string_view& s, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (s.starts_with(p)) {
      s.remove_prefix(p.size());
      return true;
    }
  }
  return false;
}

// The collective of a range or op a framework records around it
// ("nccl:all_reduce", "c10d::_allgather_base_"); unnamed for any other name.
CollectiveOp collective_op_of_call(std::string_view name) {
  if (!strip_prefix(name, {"nccl:", "rccl:", "c10d::"})) return CollectiveOp::unnamed;
  return op_in_words(name);
}

// The collective a kernel's name says ("ncclKernel_AllReduce_RING_LL_Sum_float",
// "ncclDevKernel_SendRecv(...)"); unnamed for ncclDevKernel_Generic.
CollectiveOp collective_op_of_kernel(std::string_view name) {
  if (!strip_prefix(name, {"ncclKernel_", "ncclDevKernel_", "rcclKernel_"})) return CollectiveOp::unnamed;
  // The first word only: what follows is the algorithm, the reduction and
  // the type ("_RING_LL_Sum_float"), and "Sum" is no collective.
  return op_in_words(name.substr(0, name.find_first_of("_(")));
}

// Whether a span is a range the program marked around part of its step:
// a user range, not a step marker, a Python frame or the range a framework
// records around the collective itself ("nccl:all_reduce").
bool marks_a_phase(SpanKind kind, std::string_view name) {
  return kind == SpanKind::user && !is_step_marker(name) && !is_python_frame(name) &&
         collective_op_of_call(name) == CollectiveOp::unnamed && name != "record_param_comms";
}

}  // namespace

std::string_view name_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all-reduce";
    case CollectiveOp::all_gather: return "all-gather";
    case CollectiveOp::reduce_scatter: return "reduce-scatter";
    case CollectiveOp::all_to_all: return "all-to-all";
    case CollectiveOp::send_recv: return "send/recv";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::reduce: return "reduce";
    case CollectiveOp::unnamed: return "unnamed";
  }
  return "?";
}

bool is_collective_call(std::string_view name) { return collective_op_of_call(name) != CollectiveOp::unnamed; }

CollectiveLaunch collective_launch_of(const Context& ctx, const DeviceOps& s, size_t i) {
  CollectiveLaunch out;
  if (const EventRef* l = ctx.launch_of(s.correlation[i])) {
    out.launched = true;
    const Launches& launches = ctx.model.launches[l->track];
    const ThreadActivity* th = ctx.thread(launches.thread);
    if (th != nullptr && th->spans != nullptr) {
      std::vector<uint32_t> open = th->code_spans_at(launches.start[l->index]);
      for (auto it = open.rbegin(); it != open.rend(); ++it) {  // innermost first
        const StringId id = th->spans->name[*it];
        std::string_view name = ctx.model.str(id);
        if (out.op == CollectiveOp::unnamed) out.op = collective_op_of_call(name);
        if (name.starts_with("autograd::engine::evaluate_function")) out.in_backward = true;
        if (marks_a_phase(th->spans->kind[*it], name)) out.range = id;
      }
    }
  }
  if (out.op == CollectiveOp::unnamed) out.op = collective_op_of_kernel(ctx.model.str(s.name[i]));
  return out;
}

}  // namespace loupe::prof::analysis
