// no-accelerator: the program ran on no accelerator, or the trace records
// none of the device's work; either way the device rules have nothing to
// judge, and the report says which.
#include <fmt/format.h>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// Every device that ran something is a CPU device (loupe's runtime on its
// CPU backend).
void ran_on_cpu_devices(const Context& ctx, std::vector<Finding>& out) {
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

// No device operation at all. With launches or a GPU listed, the device
// worked but the profiler did not record it; without either, nothing says
// an accelerator was used.
void recorded_no_device_work(const Context& ctx, std::vector<Finding>& out) {
  size_t launches = 0, spans = 0;
  for (const Launches& l : ctx.model.launches) launches += l.size();
  for (const HostSpans& s : ctx.model.host_spans) spans += s.size();
  if (launches == 0 && spans == 0) return;  // an empty trace: nothing to say
  std::vector<const Device*> gpus;
  for (const Device& d : ctx.model.devices) {
    if (d.kind != DeviceKind::cpu) gpus.push_back(&d);
  }
  Finding f;
  f.rule = "no-accelerator";
  f.severity = Severity::info;
  f.evidence.push_back({"device operations", "0"});
  f.evidence.push_back({"launches", format_count(launches)});
  f.evidence.push_back({"host spans", format_count(spans)});
  if (launches > 0 || !gpus.empty()) {
    f.severity = Severity::warning;
    f.title =
        "the trace records no device operations although the program used a device: idle time, transfers "
        "and kernels cannot be told from this trace";
    for (const Device* d : gpus) f.evidence.push_back({"device listed", fmt::format("{} ({})", d->id, d->name)});
    f.suggestion =
        "record device activity too (PyTorch: ProfilerActivity.CUDA in torch.profiler.profile's "
        "activities; Nsight Systems: --trace=cuda)";
  } else {
    f.title = "nothing ran on an accelerator: the trace has no device operations, no launches and lists no GPU";
    f.suggestion =
        "if the program was meant to use a GPU, check that it found one (torch.cuda.is_available(), "
        "jax.devices()) and that its tensors were moved to it";
  }
  out.push_back(std::move(f));
}

}  // namespace

void rule_no_accelerator(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  if (ctx.devices.empty()) {
    recorded_no_device_work(ctx, out);
  } else {
    ran_on_cpu_devices(ctx, out);
  }
}

}  // namespace loupe::prof::analysis
