#include "analysis/memory_blocks.h"

#include <algorithm>

namespace loupe::prof::analysis {

std::string allocation_site(const Context& ctx, uint32_t callsite, int64_t t) {
  if (callsite != 0) return ctx.stack_text(callsite);
  std::optional<uint32_t> thread = op_thread_at(ctx, t).thread;
  return thread ? ctx.enclosing_chain(*thread, t) : "";
}

OpThread op_thread_at(const Context& ctx, int64_t t) {
  OpThread found;
  for (const ThreadActivity& th : ctx.threads) {
    if (!ctx.inside_op(th.thread, t)) continue;
    if (found.thread) return {.thread = std::nullopt, .several = true};
    found.thread = th.thread;
  }
  return found;
}

bool meta_lists_device(const TraceModel& m, const char* key, uint32_t device) {
  auto it = m.info.meta.find(key);
  if (it == m.info.meta.end()) return false;
  std::string id = std::to_string(device);
  for (std::string_view rest = it->second; !rest.empty();) {
    size_t comma = rest.find(',');
    if (rest.substr(0, comma) == id) return true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

int64_t allocated_before(const MemoryEvents& me) {
  int64_t own = me.kind[0] == MemoryEventKind::alloc  ? me.bytes[0]
                : me.kind[0] == MemoryEventKind::free ? -me.bytes[0]
                                                      : 0;
  return std::max<int64_t>(0, me.allocated[0] - own);
}

int64_t allocated_at(const MemoryEvents& me, int64_t t) {
  auto after = std::upper_bound(me.time.begin(), me.time.end(), t);
  if (after == me.time.begin()) return allocated_before(me);
  return me.allocated[size_t(after - me.time.begin()) - 1];
}

}  // namespace loupe::prof::analysis
