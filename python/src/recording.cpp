// The record API for Python (loupe/capture.py and the framework hooks):
// a capture of this process, and the events the hooks report. Times are
// CLOCK_MONOTONIC nanoseconds (Python's time.monotonic_ns()), converted to
// the recorder's ticks here; each call is a few hundred nanoseconds, and
// the hooks call them only at compiles, host syncs and step boundaries, and
// (with memory recording on) at each tensor storage allocated or freed.
#include "recording.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "loupe/prof/capture.h"
#include "loupe/prof/cupti.h"
#include "loupe/prof/import.h"
#include "loupe/prof/output_file.h"
#include "loupe/prof/record.h"
#include "loupe/prof/trace_format.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace loupe::prof;

namespace loupe::python {
namespace {

// The GPUs whose memory PyTorch's allocator history records in the
// current capture (leave_cuda_memory): CUPTI's allocation records of them
// are left out until the capture has flushed them.
std::mutex g_memory_left_mu;
std::vector<uint32_t> g_memory_left;

void leave_cuda_memory(const std::vector<uint32_t>& devices) {
  std::lock_guard lock(g_memory_left_mu);
  for (uint32_t d : devices) {
    CuptiCollector::leave_memory_to_framework(d, true);
    g_memory_left.push_back(d);
  }
}

// A capture of the whole process and, where a GPU and CUPTI are, the
// collector of its device activity.
struct ProcessCapture {
  std::unique_ptr<Capture> capture;
  std::unique_ptr<CuptiCollector> cupti;
  std::string cupti_missing;  // why there is no collector; empty with one

  void stop() {
    nb::gil_scoped_release unlocked;
    cupti.reset();  // hands CUPTI's last records to the capture
    capture->stop();
    std::lock_guard lock(g_memory_left_mu);
    for (uint32_t d : g_memory_left) CuptiCollector::leave_memory_to_framework(d, false);
    g_memory_left.clear();
  }
};

std::unique_ptr<ProcessCapture> start_capture(const std::string& path, const std::string& producer,
                                              const std::string& command_line, bool gpu) {
  auto p = std::make_unique<ProcessCapture>();
  {
    nb::gil_scoped_release unlocked;
    p->capture =
        std::make_unique<Capture>(CaptureOptions{.path = path, .producer = producer, .command_line = command_line});
    if (p->capture->ok() && gpu) p->cupti = CuptiCollector::start({}, &p->cupti_missing);
  }
  if (!gpu) p->cupti_missing = "GPU collection was not asked for";
  return p;
}

nb::dict stats_of(const ProcessCapture& p) {
  CaptureStats s = p.capture->stats();
  nb::dict d;
  d["recorded"] = s.recorded;
  d["dropped"] = s.dropped;
  d["lost"] = s.lost;
  d["error"] = s.error;
  return d;
}

// The value `name` names among `choices`; an error listing the names
// ("`what` must be a, b or c") when none does.
template <typename Enum>
Enum named(const std::string& name, const char* what,
           std::initializer_list<std::pair<std::string_view, Enum>> choices) {
  for (const auto& [choice, value] : choices)
    if (name == choice) return value;
  std::string names;
  size_t left = choices.size();
  for (const auto& choice : choices) {
    names += choice.first;
    if (--left > 1) names += ", ";
    else if (left == 1) names += " or ";
  }
  throw std::invalid_argument(std::string(what) + " must be " + names + ", got '" + name + "'");
}

CompileKind compile_kind(const std::string& kind) {
  return named<CompileKind>(kind, "compile kind",
                            {{"miss", CompileKind::miss}, {"hit", CompileKind::hit}, {"aot", CompileKind::aot}});
}

CopyKind copy_direction(const std::string& direction) {
  return named<CopyKind>(direction, "direction",
                         {{"device_to_host", CopyKind::device_to_host}, {"host_to_device", CopyKind::host_to_device}});
}

SpanKind span_kind(const std::string& kind) {
  return named<SpanKind>(kind, "span kind",
                         {{"user", SpanKind::user}, {"wait", SpanKind::wait}, {"compile", SpanKind::compile}});
}

DeviceKind device_kind(const std::string& platform) {
  if (platform == "gpu" || platform == "cuda") return DeviceKind::cuda;
  return DeviceKind::cpu;
}

void record_compile(const std::string& function, const std::string& signature, const std::string& kind,
                    const std::string& reason, int64_t start_ns, int64_t end_ns, int64_t trace_ns, int64_t lower_ns,
                    int64_t compile_ns, CallSiteId site, uint64_t function_object) {
  Compile c;
  c.function = intern(function);
  c.signature = intern(signature);
  c.kind = compile_kind(kind);
  c.reason = reason;
  c.start = ticks_at_monotonic_ns(start_ns);
  c.end = ticks_at_monotonic_ns(end_ns);
  c.trace_ns = trace_ns;
  c.optimize_ns = lower_ns;
  c.codegen_ns = compile_ns;
  c.callsite = site;
  c.function_object = function_object;
  compile(std::move(c));
}

void record_transfer(const std::string& direction, int64_t start_ns, int64_t end_ns, uint32_t device, uint64_t bytes,
                     bool implicit, CallSiteId site) {
  transfer({.start = ticks_at_monotonic_ns(start_ns),
            .end = ticks_at_monotonic_ns(end_ns),
            .device = device,
            .direction = copy_direction(direction),
            .synchronous = true,
            .implicit = implicit,
            .bytes = bytes,
            .callsite = site});
}

MemoryEventKind memory_kind(const std::string& kind) {
  return named<MemoryEventKind>(kind, "memory event kind",
                                {{"alloc", MemoryEventKind::alloc}, {"free", MemoryEventKind::free}});
}

void record_memory(uint32_t device, const std::string& kind, uint64_t bytes, uint64_t address, int64_t allocated,
                   CallSiteId site) {
  memory_event({.device = device,
                .kind = memory_kind(kind),
                .bytes = bytes,
                .address = address,
                .allocated = allocated,
                .callsite = site});
}

// A PyTorch memory snapshot's allocator history (its pickle's bytes) as
// memory events of the capture, its times moved from the wall clock to the
// capture's by `wall_minus_monotonic_ns`; the devices it names. Entries
// before the capture began are left out: their blocks are what was held
// before it. A snapshot without times cannot be placed: ValueError.
std::vector<uint32_t> record_torch_snapshot(const nb::bytes& pickle, int64_t wall_minus_monotonic_ns,
                                            int64_t since_ns) {
  SnapshotHistory h = read_torch_snapshot_history(std::string_view(pickle.c_str(), pickle.size()));
  if (!h.times_known) throw std::invalid_argument("the snapshot's entries have no time_us: they cannot be placed");
  std::vector<CallSiteId> sites(h.callsites.size() + 1, kNoCallSite);
  for (size_t k = 0; k < h.callsites.size(); ++k) {
    const SnapshotFrame& f = h.callsites[k];
    sites[k + 1] = callsite(f.file.c_str(), f.line, f.function.c_str(), sites[f.parent < k + 1 ? f.parent : 0]);
  }
  for (const MemoryEventRow& e : h.events) {
    int64_t monotonic = e.time - wall_minus_monotonic_ns;
    if (monotonic < since_ns) continue;
    memory_event_at(ticks_at_monotonic_ns(monotonic), {.device = e.device,
                                                       .kind = e.kind,
                                                       .bytes = uint64_t(e.bytes),
                                                       .address = e.address,
                                                       .allocated = e.allocated,
                                                       .reserved = e.reserved,
                                                       .callsite = e.callsite < sites.size() ? sites[e.callsite] : 0});
  }
  return h.devices;
}

void record_span(const std::string& name, const std::string& kind, int64_t start_ns, int64_t end_ns, CallSiteId site) {
  span(intern(name), ticks_at_monotonic_ns(start_ns), ticks_at_monotonic_ns(end_ns), span_kind(kind), site);
}

}  // namespace

void add_recording(nb::module_& m) {
  nb::class_<ProcessCapture>(m, "ProcessCapture")
      .def_prop_ro("ok", [](const ProcessCapture& p) { return p.capture->ok(); })
      .def_prop_ro("path", [](const ProcessCapture& p) { return p.capture->path(); })
      .def_prop_ro(
          "gpu_missing", [](const ProcessCapture& p) { return p.cupti_missing; },
          "Why device activity is not collected; empty when it is.")
      .def_prop_ro("stats", &stats_of)
      .def("stop", &ProcessCapture::stop, "Flushes CUPTI, writes everything and closes the file. Idempotent.");
  m.def("start_capture", &start_capture, "path"_a, "producer"_a, "command_line"_a, "gpu"_a,
        "Starts recording this process into `path`; `gpu` also starts CUPTI's collector.");
  m.def("capturing", &capturing, "Whether a capture is recording.");
  m.def(
      "check_output_path", [](const std::string& path) { check_output_path(path); }, "path"_a,
      "Raises FileError when `path` cannot be written as a trace.");
  m.def(
      "callsite",
      [](const std::string& file, uint32_t line, const std::string& function, CallSiteId parent) {
        return callsite(file.c_str(), line, function.c_str(), parent);
      },
      "file"_a, "line"_a, "function"_a, "parent"_a = 0,
      "The id of a source line called from the call site `parent` (0: none); 0 for none.");
  m.def(
      "register_device",
      [](uint32_t id, const std::string& name, const std::string& platform) {
        register_device({.id = id, .name = name, .kind = device_kind(platform)});
      },
      "id"_a, "name"_a, "platform"_a, "Names a device of the trace (platform: cpu, gpu...).");
  m.def("set_thread_name", &set_thread_name, "name"_a);
  m.attr("META_MEMORY_SAMPLED") = kMetaMemorySampled;
  m.def(
      "note_meta", [](const std::string& key, const std::string& value) { note_meta(key, value); }, "key"_a, "value"_a,
      "A fact about the recording for the trace's meta table.");
  m.def("compile", &record_compile, "function"_a, "signature"_a, "kind"_a, "reason"_a, "start_ns"_a, "end_ns"_a,
        "trace_ns"_a, "lower_ns"_a, "compile_ns"_a, "callsite"_a, "function_object"_a, "A row of the compiles table.");
  m.def("transfer", &record_transfer, "direction"_a, "start_ns"_a, "end_ns"_a, "device"_a, "bytes"_a, "implicit"_a,
        "callsite"_a, "A synchronous host-device copy the calling thread waited for.");
  m.def("memory", &record_memory, "device"_a, "kind"_a, "bytes"_a, "address"_a, "allocated"_a, "callsite"_a,
        "A block allocated or freed on `device` (kind: alloc or free); `allocated` is the device's total after it.");
  m.def("leave_cuda_memory", &leave_cuda_memory, "devices"_a,
        "Leaves these GPUs' memory to PyTorch's allocator history for the rest of this capture: CUPTI's allocation "
        "records of them are not written.");
  m.def("torch_snapshot", &record_torch_snapshot, "pickle"_a, "wall_minus_monotonic_ns"_a, "since_ns"_a,
        "A PyTorch memory snapshot's allocator history (pickled) as memory events from since_ns (monotonic) on; "
        "returns the devices it names. Raises TraceImportError, or ValueError for one without times.");
  m.def("span", &record_span, "name"_a, "kind"_a, "start_ns"_a, "end_ns"_a, "callsite"_a,
        "A host span of the calling thread.");
  m.def(
      "step_begin", [](int64_t number) { step_begin(number); }, "number"_a, "The calling thread starts a step.");
  m.def(
      "step_end", [] { step_end(); }, "The calling thread's step ends.");
}

}  // namespace loupe::python
