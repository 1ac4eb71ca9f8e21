// no-accelerator: the program ran on the CPU device only.
#include <fmt/format.h>

#include "analysis/rules.h"

namespace loupe::prof::analysis {

void rule_no_accelerator(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  if (ctx.devices.empty()) return;
  for (const DeviceActivity& d : ctx.devices) {
    const Device* dev = ctx.model.device(d.device);
    if (dev == nullptr || dev->kind != DeviceKind::cpu) return;
  }
  Finding f;
  f.rule = "no-accelerator";
  f.severity = Severity::info;
  f.title = "the program ran on the CPU device only";
  for (const DeviceActivity& d : ctx.devices) {
    f.devices.push_back(d.device);
    f.evidence.push_back({"device", device_label(ctx, d.device)});
  }
  f.suggestion =
      "kernel times, copy bandwidths and idle gaps will differ on a GPU; the mistakes found (recompiles, "
      "synchronous transfers, eager operations) carry over";
  out.push_back(std::move(f));
}

}  // namespace loupe::prof::analysis
