#include "loupe/view/event_details.h"

#include <fmt/format.h>

#include "loupe/prof/units.h"

namespace loupe::view {

using prof::format_bytes;
using prof::format_duration;
using prof::name_of;

std::string callsite_text(const prof::TraceModel& model, uint32_t callsite) {
  const prof::CallSite* c = callsite ? model.callsite(callsite) : nullptr;
  if (!c) return "";
  std::string s = fmt::format("{}:{}", model.str(c->file), c->line);
  if (!model.str(c->function).empty()) s += " in " + model.str(c->function);
  return s;
}

namespace {

std::string copy_name(prof::CopyKind k) {
  switch (k) {
    case prof::CopyKind::host_to_device: return "HtoD";
    case prof::CopyKind::device_to_host: return "DtoH";
    case prof::CopyKind::device_to_device: return "DtoD";
    case prof::CopyKind::host_to_host: return "HtoH";
    case prof::CopyKind::peer_to_peer: return "PtoP";
    case prof::CopyKind::none: return "";
  }
  return "?";
}

}  // namespace

EventDetails describe_event(const prof::TraceModel& model, LaneKind kind, uint32_t table, size_t i) {
  EventDetails d;
  auto add = [&](std::string what, std::string value) {
    if (!value.empty()) d.lines.emplace_back(std::move(what), std::move(value));
  };
  auto timing = [&](int64_t start, int64_t dur) {
    d.start = start;
    d.end = start + dur;
    add("duration", format_duration(dur));
    add("start", format_duration(start));
  };
  switch (kind) {
    case LaneKind::spans: {
      const prof::HostSpans& s = model.host_spans[table];
      d.title = model.str(s.name[i]);
      timing(s.start[i], s.dur[i]);
      add("kind", std::string(name_of(s.kind[i])));
      add("depth", std::to_string(s.depth[i]));
      add("call site", callsite_text(model, s.callsite[i]));
      break;
    }
    case LaneKind::launches: {
      const prof::Launches& l = model.launches[table];
      d.title = model.str(l.name[i]);
      timing(l.start[i], l.dur[i]);
      add("launches on", l.device[i] == prof::kUnknownDevice
                             ? std::string("a device the trace does not say (its operation is not in it)")
                             : fmt::format("device {} stream {}", l.device[i], l.stream[i]));
      add("correlation", l.correlation[i] ? std::to_string(l.correlation[i]) : "");
      break;
    }
    case LaneKind::transfers: {
      const prof::Transfers& t = model.transfers[table];
      d.title = fmt::format("{} transfer{}", copy_name(t.direction[i]), t.synchronous[i] ? " (synchronous)" : "");
      timing(t.start[i], t.dur[i]);
      add("bytes", format_bytes(t.bytes[i]));
      add("device", std::to_string(t.device[i]));
      add("synchronous", t.synchronous[i] ? "yes" : "no");
      add("implicit", t.implicit[i] ? "yes" : "");
      add("host memory", t.host_memory[i] == prof::HostMemory::unknown ? "" : std::string(name_of(t.host_memory[i])));
      add("call site", callsite_text(model, t.callsite[i]));
      break;
    }
    case LaneKind::device_ops: {
      const prof::DeviceOps& o = model.device_ops[table];
      d.title = model.str(o.name[i]);
      timing(o.start[i], o.dur[i]);
      std::string k(name_of(o.kind[i]));
      if (o.copy_kind[i] != prof::CopyKind::none) k += " " + copy_name(o.copy_kind[i]);
      add("kind", k);
      add("bytes", o.bytes[i] ? format_bytes(o.bytes[i]) : "");
      if (o.bytes[i] > 0 && o.dur[i] > 0) {
        add("bandwidth", format_bytes(int64_t(double(o.bytes[i]) * 1e9 / double(o.dur[i]))) + "/s");
      }
      const prof::Device* dev = model.device(o.device);
      std::string device_name = dev && !dev->name.empty() ? " (" + dev->name + ")" : "";
      add("on", fmt::format("device {}{} stream {}", o.device, device_name, o.stream));
      add("correlation", o.correlation[i] ? std::to_string(o.correlation[i]) : "");
      break;
    }
    case LaneKind::instants: {
      const prof::Instants& n = model.instants[table];
      d.title = model.str(n.name[i]);
      d.start = d.end = n.time[i];
      add("at", format_duration(n.time[i]));
      add("kind", std::string(name_of(n.kind[i])));
      break;
    }
    case LaneKind::recompiles: {
      const prof::Compiles& c = model.compiles[table];
      d.title = "compile of " + model.str(c.function[i]);
      timing(c.start[i], c.dur[i]);
      add("kind", std::string(name_of(c.kind[i])));
      add("signature", model.str(c.signature[i]));
      add("reason", c.reason[i]);
      add("trace", c.trace_ns[i] ? format_duration(c.trace_ns[i]) : "");
      add("optimize", c.optimize_ns[i] ? format_duration(c.optimize_ns[i]) : "");
      add("codegen", c.codegen_ns[i] ? format_duration(c.codegen_ns[i]) : "");
      add("call site", callsite_text(model, c.callsite[i]));
      break;
    }
  }
  return d;
}

}  // namespace loupe::view
