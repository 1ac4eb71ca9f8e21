#include "loupe/view/flows.h"

#include <algorithm>

namespace loupe::view {

namespace {

// The first operation with correlation `corr` on the given device (any
// stream when `stream` is null), from a little before `from` on.
std::optional<EventRef> find_op(const prof::TraceModel& model, uint32_t device, const uint32_t* stream, int64_t from,
                                uint64_t corr, size_t max_scan) {
  for (uint32_t t = 0; t < model.device_ops.size(); ++t) {
    const prof::DeviceOps& ops = model.device_ops[t];
    if (ops.device != device || (stream && ops.stream != *stream)) continue;
    // Clocks of host and device may disagree a little: look from a few
    // events before the host side onwards.
    size_t i = prof::lower_bound_time(ops.start, from);
    i = i > 64 ? i - 64 : 0;
    for (size_t end = std::min(ops.size(), i + max_scan); i < end; ++i) {
      if (ops.correlation[i] == corr) return EventRef{t, uint32_t(i)};
    }
  }
  return std::nullopt;
}

// The operations of `ops` with correlation `corr`, outwards from the first
// to start at `t` or later. A collective's pieces on one track are
// adjacent: each direction stops at the first other operation after them.
void ops_with_correlation(const prof::DeviceOps& ops, uint32_t table, int64_t t, uint64_t corr, size_t max_scan,
                          std::vector<EventRef>& out) {
  size_t at = prof::lower_bound_time(ops.start, t);
  bool found = false;
  for (size_t i = at, n = 0; i < ops.size() && n < max_scan; ++i, ++n) {
    if (ops.correlation[i] != corr && found) break;
    if (ops.correlation[i] == corr) out.push_back({table, uint32_t(i)}), found = true;
  }
  found = false;
  for (size_t i = at, n = 0; i > 0 && n < max_scan; ++n) {
    --i;
    if (ops.correlation[i] != corr && found) break;
    if (ops.correlation[i] == corr) out.push_back({table, uint32_t(i)}), found = true;
  }
}

}  // namespace

std::vector<EventRef> same_collective(const prof::TraceModel& model, uint32_t table, uint32_t index, size_t max_scan) {
  std::vector<EventRef> out;
  if (table >= model.device_ops.size() || index >= model.device_ops[table].size()) return out;
  const prof::DeviceOps& from = model.device_ops[table];
  const uint64_t corr = from.correlation[index];
  if (corr == 0) return out;
  for (uint32_t t = 0; t < model.device_ops.size(); ++t) {
    ops_with_correlation(model.device_ops[t], t, from.start[index], corr, max_scan, out);
  }
  std::erase_if(out, [&](const EventRef& e) { return e.table == table && e.index == index; });
  return out;
}

std::optional<EventRef> device_op_of_launch(const prof::TraceModel& model, uint32_t table, uint32_t index,
                                            size_t max_scan) {
  if (table >= model.launches.size()) return std::nullopt;
  const prof::Launches& l = model.launches[table];
  if (index >= l.size() || l.correlation[index] == 0) return std::nullopt;
  return find_op(model, l.device[index], &l.stream[index], l.start[index], l.correlation[index], max_scan);
}

std::optional<EventRef> device_op_of_transfer(const prof::TraceModel& model, uint32_t table, uint32_t index,
                                              size_t max_scan) {
  if (table >= model.transfers.size()) return std::nullopt;
  const prof::Transfers& t = model.transfers[table];
  if (index >= t.size() || t.correlation[index] == 0) return std::nullopt;
  return find_op(model, t.device[index], nullptr, t.start[index], t.correlation[index], max_scan);
}

std::optional<EventRef> launch_of_device_op(const prof::TraceModel& model, uint32_t table, uint32_t index,
                                            size_t max_scan) {
  if (table >= model.device_ops.size()) return std::nullopt;
  const prof::DeviceOps& ops = model.device_ops[table];
  if (index >= ops.size() || ops.correlation[index] == 0) return std::nullopt;
  const uint64_t corr = ops.correlation[index];
  for (uint32_t t = 0; t < model.launches.size(); ++t) {
    const prof::Launches& l = model.launches[t];
    // Launches start before their operation: scan back from it (and a few
    // events past it, for clock skew).
    size_t i = std::min(l.size(), prof::lower_bound_time(l.start, ops.start[index]) + 64);
    for (size_t n = 0; i > 0 && n < max_scan; ++n) {
      --i;
      if (l.correlation[i] == corr && l.device[i] == ops.device && l.stream[i] == ops.stream) {
        return EventRef{t, uint32_t(i)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace loupe::view
