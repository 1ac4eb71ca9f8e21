// JAX profiler traces: the trace-viewer / Perfetto JSON that jax.profiler
// writes. XLA's profiler names each process after the plane it recorded:
//   "/host:CPU"      host threads: Python (when traced), the PjRt runtime,
//                    and the compiler's threads;
//   "/host:CUPTI"    CUDA driver calls, each with a correlation_id;
//   "/device:GPU:N"  one thread per stream ("Stream #14(Kernel,MemcpyH2D)")
//                    holding kernels and copies, plus derived lines ("XLA
//                    Ops", "XLA Modules", "Steps", ...) that repeat them.
// Calls of jitted functions show as "PjitFunction(name)" spans; the ones
// that missed the compile cache contain the lowering
// ("lower_sharding_computation") and XLA's compile
// ("backend_compile_and_load"): each call becomes a compiles row, a miss
// with its phase times or a hit, so recompiles show up.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "import/chrome_common.h"
#include "import/decimal.h"
#include "import/mappings.h"

namespace loupe::prof::import {

namespace {

enum class Process : uint8_t { host, cupti, device };

struct ProcessInfo {
  Process kind = Process::host;
  uint32_t device = 0;
};

bool icontains(std::string_view s, std::string_view part) {
  auto lower = [](char c) { return char(c >= 'A' && c <= 'Z' ? c + 32 : c); };
  if (part.size() > s.size()) return false;
  for (size_t i = 0; i + part.size() <= s.size(); ++i) {
    size_t k = 0;
    while (k < part.size() && lower(s[i + k]) == lower(part[k])) ++k;
    if (k == part.size()) return true;
  }
  return false;
}

// "lower_sharding_computation", "lower_mesh_computation": JAX lowering to
// StableHLO.
bool is_lowering(std::string_view name) { return name.starts_with("lower_") || name == "pjit_lower"; }
// "backend_compile_and_load", "backend_compile": XLA compiling the module.
bool is_backend_compile(std::string_view name) { return name.starts_with("backend_compile"); }

// "PjitFunction(f)" -> "f".
std::optional<std::string_view> jitted_function(std::string_view name) {
  constexpr std::string_view kPrefix = "PjitFunction(";
  if (!name.starts_with(kPrefix) || !name.ends_with(")")) return std::nullopt;
  return name.substr(kPrefix.size(), name.size() - kPrefix.size() - 1);
}

// "key:value" out of XLA's space-separated details ("kind_src:pageable
// kind_dst:device size:4096 dest:0 async:0").
std::string_view detail(std::string_view details, std::string_view key) {
  size_t p = 0;
  while (p < details.size()) {
    size_t end = details.find(' ', p);
    if (end == std::string_view::npos) end = details.size();
    std::string_view item = details.substr(p, end - p);
    if (item.size() > key.size() && item.starts_with(key) && item[key.size()] == ':') {
      return item.substr(key.size() + 1);
    }
    p = end + 1;
  }
  return {};
}

HostMemory host_memory_of(std::string_view kind) {
  if (kind == "pageable") return HostMemory::pageable;
  if (kind == "pinned") return HostMemory::pinned;
  return HostMemory::unknown;
}

class JaxMapper {
 public:
  JaxMapper(ChromeTrace& raw, StringPool& strings, ImportedTrace& out)
      : raw_(raw), strings_(strings), out_(out), threads_(raw, strings) {}

  void run() {
    complete_begin_end(raw_);
    for (const auto& [pid, name] : raw_.process_names) processes_[pid] = classify_process(name);
    for (const ChromeEvent& e : raw_.events) event(e);
    compiles();
    join_api_calls(calls_, ops_, {}, strings_, out_);
    for (const PendingOp& op : ops_) streams_used_.insert({op.row.device, op.row.stream});
    emit_device_ops(ops_, out_);
    devices_and_streams();
    finish_mapping(raw_, threads_, out_);
    out_.meta["source_format"] = "jax";
    out_.meta["clock"] = "jax profiler: ts in us from the start of the profile";
  }

 private:
  static ProcessInfo classify_process(const std::string& name) {
    if (name.starts_with("/device:")) {
      // "/device:GPU:0" (also "/device:GPU:0 (pid 3)" in some versions).
      size_t colon = name.find(':', 8);
      if (colon != std::string::npos) {
        if (auto id = parse_integer(std::string_view(name).substr(colon + 1, name.find(' ', colon) - colon - 1))) {
          if (*id >= 0 && *id <= 0xffff) return {Process::device, uint32_t(*id)};
        }
      }
      return {Process::device, 0};
    }
    if (name == "/host:CUPTI") return {Process::cupti, 0};
    return {Process::host, 0};
  }

  ProcessInfo process_of(const Lane& lane) const {
    auto it = processes_.find(lane.pid);
    return it == processes_.end() ? ProcessInfo{} : it->second;
  }

  std::string_view thread_name(uint32_t lane) const {
    auto it = raw_.thread_names.find(lane);
    return it == raw_.thread_names.end() ? std::string_view() : std::string_view(it->second);
  }

  void skip(const char* why) { ++out_.skipped[why]; }

  void event(const ChromeEvent& e) {
    const Lane& lane = raw_.lanes[e.lane];
    ProcessInfo p = process_of(lane);
    if (is_flow(e)) {
      skip("flow events");
      return;
    }
    if (is_instant(e)) {
      if (p.kind == Process::device) {
        skip("instant events on device lanes");
      } else {
        add_host_instant(e, threads_, out_);
      }
      return;
    }
    if (const char* why = why_not_complete(e)) return skip(why);
    switch (p.kind) {
      case Process::device: device_op(e, p.device); break;
      case Process::cupti:
        calls_.push_back({threads_.thread(e.lane), e.ts, e.dur, e.name, e.correlation, kNone, e.lane});
        break;
      case Process::host: host_event(e); break;
    }
  }

  void device_op(const ChromeEvent& e, uint32_t device) {
    std::string_view line = thread_name(e.lane);
    constexpr std::string_view kStream = "Stream #";
    if (!line.starts_with(kStream)) {
      skip("events on derived device lines (XLA Ops, XLA Modules, Steps, ...)");
      return;
    }
    std::string_view digits = line.substr(kStream.size());
    digits = digits.substr(0, std::min(digits.find('('), digits.find(' ')));
    std::optional<int64_t> stream = parse_integer(digits);
    if (!stream || *stream < 0 || *stream > 0xffffffffll) {
      skip("events on device lines without a stream number");
      return;
    }
    PendingOp op;
    op.row.device = device;
    op.row.stream = uint32_t(*stream);
    op.row.start = e.ts;
    op.row.dur = e.dur;
    op.row.name = e.name;
    op.correlation = e.correlation;
    op.lane = e.lane;
    std::string_view name = strings_.text(e.name);
    std::string_view details = e.arg_kind ? strings_.text(e.arg_kind) : std::string_view();
    if (name.starts_with("Memcpy") || details.find("kind_src:") != std::string_view::npos) {
      op.row.kind = DeviceOpKind::memcpy;
      if (name.starts_with("MemcpyH2D")) op.row.copy_kind = CopyKind::host_to_device;
      else if (name.starts_with("MemcpyD2H")) op.row.copy_kind = CopyKind::device_to_host;
      else if (name.starts_with("MemcpyD2D")) op.row.copy_kind = CopyKind::device_to_device;
      else if (name.starts_with("MemcpyP2P")) op.row.copy_kind = CopyKind::peer_to_peer;
      if (op.row.copy_kind == CopyKind::host_to_device) op.host_memory = host_memory_of(detail(details, "kind_src"));
      if (op.row.copy_kind == CopyKind::device_to_host) op.host_memory = host_memory_of(detail(details, "kind_dst"));
      op.bytes = parse_integer(detail(details, "size")).value_or(e.bytes);
    } else if (name.starts_with("Memset") || details.find("num_bytes:") != std::string_view::npos) {
      op.row.kind = DeviceOpKind::memset;
      op.bytes = parse_integer(detail(details, "num_bytes")).value_or(e.bytes);
    } else {
      op.row.kind = DeviceOpKind::kernel;
      op.bytes = 0;
    }
    ops_.push_back(op);
  }

  void host_event(const ChromeEvent& e) {
    uint32_t thread = threads_.thread(e.lane);
    if (e.step != kNone) {
      out_.steps.push_back({.thread = thread, .start = e.ts, .dur = e.dur, .number = e.step});
      return;
    }
    std::string_view name = strings_.text(e.name);
    std::string_view line = thread_name(e.lane);
    SpanKind kind = SpanKind::runtime;
    if (name.starts_with("$")) {
      kind = SpanKind::user;  // the Python tracer: "$file.py:12 function"
    } else if (is_lowering(name) || is_backend_compile(name) || icontains(line, "compil") ||
               icontains(line, "codegen") || icontains(name, "compile")) {
      kind = SpanKind::compile;
    }
    out_.host_spans.push_back({.thread = thread, .start = e.ts, .dur = e.dur, .name = e.name, .kind = kind});
  }

  // One call of a jitted function; compile_end stays kNone when it hit the cache.
  struct Call {
    uint32_t thread;
    int64_t start, end;
    std::string_view function;
    int64_t compile_end = kNone, lower_start = kNone, lower_end = kNone, codegen = 0;
  };

  struct JittedCalls {
    std::vector<Call> calls;
    std::vector<const HostSpanRow*> orphans;  // compiles outside any call
  };

  // One compiles row per call of a jitted function: PjitFunction(name)
  // spans, the duplicate nested span of the same name folded in, calls
  // made while tracing another function (nested under a different name)
  // left out. A call that holds a backend compile is a miss.
  void compiles() {
    JittedCalls found = jitted_calls();
    add_call_compiles(found.calls);
    add_orphan_compiles(found.orphans);
  }

  // Host spans by thread, then start, the enclosing span before what it holds.
  std::vector<uint32_t> spans_in_nesting_order() const {
    std::vector<uint32_t> order(out_.host_spans.size());
    std::iota(order.begin(), order.end(), 0u);
    const auto& spans = out_.host_spans;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (spans[a].thread != spans[b].thread) return spans[a].thread < spans[b].thread;
      if (spans[a].start != spans[b].start) return spans[a].start < spans[b].start;
      return spans[a].dur > spans[b].dur;
    });
    return order;
  }

  // The calls of jitted functions, each with the lowering and backend
  // compiles it holds, and the backend compiles held by none.
  JittedCalls jitted_calls() const {
    const auto& spans = out_.host_spans;
    JittedCalls found;
    struct Open {
      int64_t end;
      std::string_view function;
      int64_t call;  // index into calls, or -1 for a call made while tracing
    };
    std::vector<Open> stack;
    uint32_t thread = ~0u;
    for (uint32_t i : spans_in_nesting_order()) {
      const HostSpanRow& s = spans[i];
      if (s.thread != thread) {
        stack.clear();
        thread = s.thread;
      }
      while (!stack.empty() && stack.back().end <= s.start) stack.pop_back();
      std::string_view name = strings_.text(s.name);
      if (auto function = jitted_function(name)) {
        int64_t call = -1;
        if (stack.empty()) {
          found.calls.push_back({s.thread, s.start, s.start + s.dur, *function});
          call = int64_t(found.calls.size() - 1);
        } else if (stack.back().function == *function) {
          call = stack.back().call;  // the same call, recorded twice
        }
        stack.push_back({s.start + s.dur, *function, call});
        continue;
      }
      bool lowering = is_lowering(name), backend = is_backend_compile(name);
      if (!lowering && !backend) continue;
      int64_t call = stack.empty() ? -1 : stack.back().call;
      if (call < 0) {
        if (backend) found.orphans.push_back(&s);
        continue;
      }
      add_compile_phase(found.calls[size_t(call)], s, lowering);
    }
    return found;
  }

  // A lowering or backend compile span into the call that holds it.
  static void add_compile_phase(Call& c, const HostSpanRow& s, bool lowering) {
    if (lowering) {
      c.lower_start = c.lower_start == kNone ? s.start : std::min(c.lower_start, s.start);
      c.lower_end = std::max(c.lower_end, s.start + s.dur);
    } else {
      c.compile_end = std::max(c.compile_end, s.start + s.dur);
      c.codegen += s.dur;
    }
  }

  void add_call_compiles(const std::vector<Call>& calls) {
    std::set<std::string_view> compiled;
    for (const Call& c : calls) {
      CompileRow row;
      row.thread = c.thread;
      row.start = c.start;
      row.function = strings_.intern(c.function);
      if (c.compile_end == kNone) {
        row.kind = CompileKind::hit;
        row.dur = c.end - c.start;
      } else {
        row.kind = CompileKind::miss;
        row.dur = c.compile_end - c.start;
        // Tracing and lowering (JAX), then XLA's compile; the trace does not
        // split XLA's optimisation from its code generation.
        int64_t traced_until = c.lower_end != kNone ? c.lower_end : c.compile_end - c.codegen;
        row.trace_ns = std::max<int64_t>(0, traced_until - c.start);
        row.codegen_ns = c.codegen;
        row.reason = compiled.insert(c.function).second
                         ? "first compile in the trace"
                         : "compiled again (the trace records no input signature: a new shape, dtype or static "
                           "argument, or a new function object)";
      }
      out_.compiles.push_back(std::move(row));
    }
  }

  void add_orphan_compiles(const std::vector<const HostSpanRow*>& orphans) {
    for (const HostSpanRow* s : orphans) {
      CompileRow row;
      row.thread = s->thread;
      row.start = s->start;
      row.dur = s->dur;
      row.function = strings_.intern("(unknown: compiled outside a jitted call)");
      row.kind = CompileKind::miss;
      row.codegen_ns = s->dur;
      row.reason = "compiled outside a traced call (ahead of time?)";
      out_.compiles.push_back(std::move(row));
    }
  }

  // GPU planes are devices (TPU and other planes carry no stream lanes
  // loupe reads); so is any device a stream lane names.
  void devices_and_streams() {
    std::map<uint32_t, std::string> devices;
    for (const auto& [pid, info] : processes_) {
      const std::string& name = raw_.process_names.at(pid);
      if (info.kind == Process::device && name.starts_with("/device:GPU")) devices.emplace(info.device, name);
    }
    for (const auto& [device, stream] : streams_used_) devices.emplace(device, fmt::format("/device:GPU:{}", device));
    for (const auto& [id, name] : devices) out_.devices.push_back({.id = id, .name = name, .kind = DeviceKind::cuda});
    for (const auto& [device, stream] : streams_used_) {
      out_.streams.push_back({.device = device, .stream = stream, .name = fmt::format("Stream #{}", stream)});
    }
  }

  ChromeTrace& raw_;
  StringPool& strings_;
  ImportedTrace& out_;
  LaneThreads threads_;
  std::map<LaneId, ProcessInfo> processes_;
  std::vector<ApiCall> calls_;
  std::vector<PendingOp> ops_;
  std::set<std::pair<uint32_t, uint32_t>> streams_used_;
};

}  // namespace

bool is_jax_trace(const ChromeTrace& raw) {
  for (const auto& [pid, name] : raw.process_names) {
    if (name.starts_with("/host:") || name.starts_with("/device:")) return true;
  }
  return false;
}

void map_jax(ChromeTrace& raw, StringPool& strings, ImportedTrace& out) { JaxMapper(raw, strings, out).run(); }

}  // namespace loupe::prof::import
