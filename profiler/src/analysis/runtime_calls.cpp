#include "analysis/runtime_calls.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

bool is_runtime_call(std::string_view name) {
  return name.starts_with("cuda") || name.starts_with("hip") ||
         (name.size() > 2 && name.starts_with("cu") && name[2] >= 'A' && name[2] <= 'Z');
}

HostWork runtime_call_kind(std::string_view name) {
  auto has = [&](std::string_view word) { return name.find(word) != std::string_view::npos; };
  if (!is_runtime_call(name)) return HostWork::code;
  if (has("Launch")) return HostWork::launch_call;
  if (has("Malloc") || has("Free") || has("HostAlloc") || has("HostRegister") || has("MemAlloc") || has("MemCreate") ||
      has("MemMap"))
    return HostWork::memory_call;
  if (has("Memcpy") || has("Memset") || has("Synchronize") || has("Wait") || has("Query")) return HostWork::code;
  return HostWork::runtime_call;
}

bool FirstRuns::first_run(uint64_t correlation) {
  const EventRef* op = ctx_.op_of(correlation);
  if (op == nullptr) return false;
  const DeviceOps& s = ctx_.model.device_ops[op->track];
  if (s.kind[op->index] != DeviceOpKind::kernel) return false;
  if (s.device >= earliest_.size()) earliest_.resize(size_t(s.device) + 1);
  std::vector<int64_t>& earliest = earliest_[s.device];
  if (earliest.empty()) {
    earliest.assign(ctx_.model.strings.size(), INT64_MAX);
    for (const DeviceOps& o : ctx_.model.device_ops) {
      if (o.device != s.device) continue;
      for (size_t i = 0; i < o.size(); ++i) {
        if (o.kind[i] == DeviceOpKind::kernel) earliest[o.name[i]] = std::min(earliest[o.name[i]], o.start[i]);
      }
    }
  }
  return s.start[op->index] == earliest[s.name[op->index]];
}

RuntimeCalls runtime_calls_in(const Context& ctx, const ThreadActivity& t, FirstRuns& first, int64_t a, int64_t b) {
  std::map<std::string_view, CallsOfName> by_name;
  auto add = [&](std::string_view name, int64_t start, int64_t end, bool start_up, std::string_view kernel) {
    const int64_t inside = std::min(b, end) - std::max(a, start);
    if (inside <= 0) return;
    CallsOfName& c = by_name[name];
    c.name = name;
    c.ns += inside;
    ++c.calls;
    if (!start_up) return;
    c.start_up_ns += inside;
    if (inside > c.longest_start_up_ns) {
      c.longest_start_up_ns = inside;
      c.first_kernel = kernel;
      c.first_call_at = std::max(a, start);
    }
  };
  for (const std::vector<uint32_t>& at : t.code_by_depth) {
    auto it = std::partition_point(at.begin(), at.end(), [&](uint32_t i) { return t.spans->end(i) <= a; });
    for (; it != at.end() && t.spans->start[*it] < b; ++it) {
      std::string_view name = ctx.model.str(t.spans->name[*it]);
      if (!is_runtime_call(name)) continue;
      const HostWork kind = runtime_call_kind(name);
      const bool set_up =
          (kind == HostWork::memory_call || kind == HostWork::runtime_call) && t.spans->dur[*it] >= kSetUpCallNs;
      add(name, t.spans->start[*it], t.spans->end(*it), set_up, "");
    }
  }
  if (t.launches != nullptr) {
    const Launches& l = *t.launches;
    auto from = std::partition_point(l.start.begin(), l.start.end(), [&](int64_t s) { return s < a; });
    size_t i = size_t(from - l.start.begin());
    if (i > 0 && l.end(i - 1) > a) --i;  // a call under way when the window began
    for (; i < l.size() && l.start[i] < b; ++i) {
      const bool module_load = l.dur[i] >= kModuleLoadNs && first.first_run(l.correlation[i]);
      std::string_view kernel;
      if (module_load) {
        const EventRef* op = ctx.op_of(l.correlation[i]);
        kernel = ctx.model.str(ctx.model.device_ops[op->track].name[op->index]);
      }
      add(ctx.model.str(l.name[i]), l.start[i], l.end(i), module_load, kernel);
    }
  }
  RuntimeCalls out;
  for (auto& [name, c] : by_name) {
    out.start_up_ns += c.start_up_ns;
    out.by_name.push_back(c);
  }
  std::sort(out.by_name.begin(), out.by_name.end(),
            [](const CallsOfName& x, const CallsOfName& y) { return x.ns > y.ns; });
  return out;
}

std::string runtime_calls_text(const RuntimeCalls& calls, size_t most) {
  std::string out;
  for (size_t i = 0; i < calls.by_name.size() && i < most; ++i) {
    const CallsOfName& c = calls.by_name[i];
    out += fmt::format("{}{} {}", i == 0 ? "" : ", ", c.name, format_duration(c.ns));
    if (c.calls > 1) out += fmt::format(" ({} calls)", format_count(c.calls));
    if (!c.first_kernel.empty()) out += fmt::format(" (the first launch of `{}`: its module loading)", c.first_kernel);
  }
  if (calls.by_name.size() > most) out += fmt::format(", {} more", calls.by_name.size() - most);
  return out;
}

}  // namespace loupe::prof::analysis
