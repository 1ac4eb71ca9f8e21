#include "loupe/view/event_details.h"

#include <fmt/format.h>

#include "loupe/prof/units.h"
#include "loupe/view/lane_kinds.h"

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

// A line is left out when its value is empty.
void add(EventDetails& d, std::string what, std::string value) {
  if (!value.empty()) d.lines.emplace_back(std::move(what), std::move(value));
}

// How the details of event `i` of a table of events with a duration begin:
// the title, then its duration and start.
template <typename Table>
EventDetails timed_event(std::string title, const Table& events, size_t i) {
  EventDetails d;
  d.title = std::move(title);
  d.start = events.start[i];
  d.end = events.end(i);
  add(d, "duration", format_duration(events.dur[i]));
  add(d, "start", format_duration(events.start[i]));
  return d;
}

}  // namespace

EventDetails describe_span(const prof::TraceModel& model, const prof::HostSpans& s, size_t i) {
  EventDetails d = timed_event(model.str(s.name[i]), s, i);
  add(d, "kind", std::string(name_of(s.kind[i])));
  add(d, "depth", std::to_string(s.depth[i]));
  add(d, "call site", callsite_text(model, s.callsite[i]));
  return d;
}

EventDetails describe_launch(const prof::TraceModel& model, const prof::Launches& l, size_t i) {
  EventDetails d = timed_event(model.str(l.name[i]), l, i);
  add(d, "launches on",
      l.device[i] == prof::kUnknownDevice ? std::string("a device the trace does not say (its operation is not in it)")
                                          : fmt::format("device {} stream {}", l.device[i], l.stream[i]));
  add(d, "correlation", l.correlation[i] ? std::to_string(l.correlation[i]) : "");
  return d;
}

EventDetails describe_transfer(const prof::TraceModel& model, const prof::Transfers& t, size_t i) {
  const char* sync = t.synchronous[i] ? " (synchronous)" : "";
  EventDetails d = timed_event(fmt::format("{} transfer{}", copy_name(t.direction[i]), sync), t, i);
  add(d, "bytes", format_bytes(t.bytes[i]));
  add(d, "device", std::to_string(t.device[i]));
  add(d, "synchronous", t.synchronous[i] ? "yes" : "no");
  add(d, "implicit", t.implicit[i] ? "yes" : "");
  add(d, "host memory", t.host_memory[i] == prof::HostMemory::unknown ? "" : std::string(name_of(t.host_memory[i])));
  add(d, "call site", callsite_text(model, t.callsite[i]));
  return d;
}

EventDetails describe_device_op(const prof::TraceModel& model, const prof::DeviceOps& o, size_t i) {
  EventDetails d = timed_event(model.str(o.name[i]), o, i);
  std::string k(name_of(o.kind[i]));
  if (o.copy_kind[i] != prof::CopyKind::none) k += " " + copy_name(o.copy_kind[i]);
  add(d, "kind", k);
  add(d, "bytes", o.bytes[i] ? format_bytes(o.bytes[i]) : "");
  if (o.bytes[i] > 0 && o.dur[i] > 0) {
    add(d, "bandwidth", format_bytes(int64_t(double(o.bytes[i]) * 1e9 / double(o.dur[i]))) + "/s");
  }
  const prof::Device* dev = model.device(o.device);
  std::string device_name = dev && !dev->name.empty() ? " (" + dev->name + ")" : "";
  add(d, "on", fmt::format("device {}{} stream {}", o.device, device_name, o.stream));
  add(d, "correlation", o.correlation[i] ? std::to_string(o.correlation[i]) : "");
  return d;
}

EventDetails describe_instant(const prof::TraceModel& model, const prof::Instants& n, size_t i) {
  EventDetails d;
  d.title = model.str(n.name[i]);
  d.start = d.end = n.time[i];
  add(d, "at", format_duration(n.time[i]));
  add(d, "kind", std::string(name_of(n.kind[i])));
  return d;
}

EventDetails describe_compile(const prof::TraceModel& model, const prof::Compiles& c, size_t i) {
  EventDetails d = timed_event("compile of " + model.str(c.function[i]), c, i);
  add(d, "kind", std::string(name_of(c.kind[i])));
  add(d, "signature", model.str(c.signature[i]));
  add(d, "reason", c.reason[i]);
  add(d, "trace", c.trace_ns[i] ? format_duration(c.trace_ns[i]) : "");
  add(d, "optimize", c.optimize_ns[i] ? format_duration(c.optimize_ns[i]) : "");
  add(d, "codegen", c.codegen_ns[i] ? format_duration(c.codegen_ns[i]) : "");
  add(d, "call site", callsite_text(model, c.callsite[i]));
  return d;
}

EventDetails describe_collective(const prof::TraceModel& model, const prof::Collectives& c, size_t i) {
  EventDetails d = timed_event(model.str(c.name[i]), c, i);
  add(d, "process group", model.str(c.process_group));
  add(d, "ranks", c.group_size[i] ? std::to_string(c.group_size[i]) : "");
  add(d, "in", c.in_bytes[i] > 0 ? format_bytes(c.in_bytes[i]) : "");
  add(d, "out", c.out_bytes[i] > 0 ? format_bytes(c.out_bytes[i]) : "");
  add(d, "issued", std::to_string(c.issued[i]));
  add(d, "on", c.on_device[i] ? fmt::format("device {} stream {}", c.device[i], c.stream[i]) : "the host");
  return d;
}

EventDetails describe_event(const prof::TraceModel& model, LaneKind kind, uint32_t table, size_t i) {
  return lane_kind_info(kind).describe(model, table, i);
}

}  // namespace loupe::view
