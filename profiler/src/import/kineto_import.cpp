// PyTorch profiler (Kineto) traces: Chrome JSON whose categories say what
// each event is. docs/import.md has the mapping table; in short:
//   cpu_op, user_annotation, python_function  -> host spans (ProfilerStep#N -> steps)
//   cuda_runtime / cuda_driver (hip* on ROCm) -> launches when they started a
//       device op, waits when they synchronise, runtime spans otherwise
//   kernel, gpu_memcpy, gpu_memset             -> device ops (+ transfers for copies)
//   kernels with a "Collective name" (NCCL)    -> collectives too, issued at their launch
//   gloo:* user annotations                    -> collectives run on the host
//   cuda_sync                                  -> syncs, and marks its call as a wait if it blocks
//   [memory] instants                          -> memory events
//   deviceProperties                           -> devices
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "import/chrome_common.h"
#include "import/decimal.h"
#include "import/kineto_vocabulary.h"
#include "import/mappings.h"

namespace loupe::prof::import {

namespace {

CopyKind copy_kind_of(std::string_view token) {
  if (token == "HtoD" || token == "HtoA") return CopyKind::host_to_device;
  if (token == "DtoH" || token == "AtoH") return CopyKind::device_to_host;
  if (token == "DtoD" || token == "AtoA" || token == "AtoD" || token == "DtoA") return CopyKind::device_to_device;
  if (token == "HtoH") return CopyKind::host_to_host;
  if (token == "PtoP") return CopyKind::peer_to_peer;
  return CopyKind::none;
}

HostMemory host_memory_of(std::string_view word) {
  if (word == "Pageable") return HostMemory::pageable;
  if (word == "Pinned") return HostMemory::pinned;
  return HostMemory::unknown;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "Memcpy HtoD (Pageable -> Device)": the direction, and where the host
// side of the copy lives.
void parse_memcpy_name(std::string_view name, CopyKind& kind, HostMemory& host) {
  size_t p = name.find("Memcpy ");
  if (p == std::string_view::npos) return;
  std::string_view rest = name.substr(p + 7);
  std::string_view token = rest.substr(0, rest.find(' '));
  kind = copy_kind_of(token);
  size_t open = rest.find('('), arrow = rest.find("->"), close = rest.find(')');
  if (open == std::string_view::npos || arrow == std::string_view::npos || close == std::string_view::npos ||
      !(open < arrow && arrow < close)) {
    return;
  }
  std::string_view src = trim(rest.substr(open + 1, arrow - open - 1));
  std::string_view dst = trim(rest.substr(arrow + 2, close - arrow - 2));
  if (kind == CopyKind::host_to_device || kind == CopyKind::host_to_host) host = host_memory_of(src);
  if (kind == CopyKind::device_to_host) host = host_memory_of(dst);
}

// A copy's or set's duration in nanoseconds. Kineto writes its own
// "memory bandwidth (GB/s)" as the bytes over the nanoseconds CUPTI
// measured, while older versions write "dur" in whole microseconds, cut
// down: a 128-byte copy of 1.984 us reads "dur": 1. The bytes over that
// bandwidth give the measured duration back; it is taken when it lies in
// the microsecond the written one was cut from, so a bandwidth that
// disagrees with the event changes nothing.
int64_t copy_duration(const ChromeEvent& e) {
  if (e.dur == kNone || e.dur < 0 || e.bytes <= 0 || !(e.bandwidth > 0)) return e.dur;
  double measured = double(e.bytes) / e.bandwidth;
  if (!(measured < double(e.dur) + 1000)) return e.dur;
  return std::max(e.dur, int64_t(std::llround(measured)));
}

constexpr std::string_view kGlooPrefix = "gloo:";

// The size of one element of PyTorch's dtype names ("Float", "BFloat16");
// 0 when unknown, and the message's bytes cannot be told.
int64_t element_bytes(std::string_view dtype) {
  if (dtype == "Double" || dtype == "Long" || dtype == "ComplexFloat") return 8;
  if (dtype == "Float" || dtype == "Int") return 4;
  if (dtype == "Half" || dtype == "BFloat16" || dtype == "Short") return 2;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype.starts_with("Float8")) return 1;
  if (dtype == "ComplexDouble") return 16;
  return 0;
}

std::optional<int64_t> step_number(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  return parse_integer(name.substr(kPrefix.size()));
}

class KinetoMapper {
 public:
  KinetoMapper(ChromeTrace& raw, StringPool& strings, ImportedTrace& out)
      : raw_(raw), strings_(strings), out_(out), threads_(raw, strings) {}

  void run() {
    complete_begin_end(raw_);
    reserve();
    for (const ChromeEvent& e : raw_.events) event(e);
    link_flows();
    join_calls();
    device_collectives();
    finish_ops();
    devices_and_streams();
    finish_mapping(raw_, threads_, out_);
    clock();
  }

 private:
  // Every row vector sized once from a count of the categories: growing
  // them by doubling would copy them and touch fresh pages many times over.
  void reserve() {
    size_t spans = 0, calls = 0, ops = 0, copies = 0, points = 0;
    for (const ChromeEvent& e : raw_.events) {
      if (is_instant(e)) {
        ++points;
        continue;
      }
      if (e.ph != 'X') continue;
      switch (cat(e.cat)) {
        case KinetoCat::runtime: ++calls; break;
        case KinetoCat::kernel:
        case KinetoCat::memset: ++ops; break;
        case KinetoCat::memcpy:
          ++ops;
          ++copies;
          break;
        case KinetoCat::sync:
        case KinetoCat::gpu_user_annotation:
        case KinetoCat::overhead: break;
        case KinetoCat::other:
        case KinetoCat::cpu_op:
        case KinetoCat::user_annotation:
        case KinetoCat::python_function:
        case KinetoCat::ac2g: ++spans; break;
      }
    }
    calls_.reserve(calls);
    ops_.reserve(ops);
    out_.host_spans.reserve(spans + calls);
    out_.launches.reserve(std::min(calls, ops));
    out_.transfers.reserve(copies);
    out_.device_ops.reserve(ops);
    out_.memory.reserve(points);
  }

  KinetoCat cat(StringId id) {
    if (id == last_cat_id_) return last_cat_;  // runs of one category are the rule
    auto [it, inserted] = cats_.try_emplace(id, KinetoCat::other);
    if (inserted) it->second = kineto_category(strings_.text(id));
    last_cat_id_ = id;
    last_cat_ = it->second;
    return it->second;
  }

  void skip(const char* why) { ++out_.skipped[why]; }

  void span(const ChromeEvent& e, SpanKind kind) {
    out_.host_spans.push_back({.thread = threads_.thread(e.lane),
                               .start = e.ts,
                               .dur = std::max<int64_t>(e.dur, 0),
                               .name = e.name,
                               .kind = kind});
  }

  void event(const ChromeEvent& e) {
    const Lane& lane = raw_.lanes[e.lane];
    KinetoCat c = cat(e.cat);
    if (is_flow(e)) {
      if (c == KinetoCat::ac2g && e.correlation != kNone) {
        // The flow's ends sit where the launch and the device op are: a
        // fallback link for events that lack args.correlation.
        flows_.push_back(&e);
      } else {
        skip("flow events other than ac2g (fwdbwd, ...)");
      }
      return;
    }
    if (lane.pid.is_string) {
      // pid "Spans" / "Traces": the profiler's own window and markers.
      skip("the profiler's own spans and markers (pid 'Spans', 'Traces')");
      return;
    }
    if (e.ph == 'i' || e.ph == 'I' || e.ph == 'n') {
      if (strings_.text(e.name) == "[memory]") {
        memory(e);
      } else {
        add_host_instant(e, threads_, out_);
      }
      return;
    }
    if (const char* why = why_not_complete(e)) return skip(why);
    if ((c == KinetoCat::cpu_op || c == KinetoCat::user_annotation) && e.external != kNone) {
      host_op_ids_.push_back({e.lane, e.external});
    }
    switch (c) {
      case KinetoCat::cpu_op: span(e, SpanKind::runtime); break;
      case KinetoCat::user_annotation:
        if (auto n = step_number(strings_.text(e.name))) {
          out_.steps.push_back({.thread = threads_.thread(e.lane), .start = e.ts, .dur = e.dur, .number = *n});
        } else {
          span(e, SpanKind::user);
          if (strings_.text(e.name).starts_with(kGlooPrefix)) host_collective(e);
        }
        break;
      case KinetoCat::python_function: span(e, SpanKind::user); break;
      case KinetoCat::runtime:
        calls_.push_back({threads_.thread(e.lane), e.ts, e.dur, e.name, e.correlation, e.bytes, e.lane});
        if (strings_.text(e.name).starts_with("hip")) rocm_ = true;
        break;
      case KinetoCat::kernel:
      case KinetoCat::memcpy:
      case KinetoCat::memset: device_op(e, c); break;
      case KinetoCat::sync: sync_record(e); break;
      case KinetoCat::gpu_user_annotation: skip("gpu_user_annotation (user annotations repeated on GPU lanes)"); break;
      case KinetoCat::overhead: skip("overhead (profiler overhead on GPU lanes)"); break;
      case KinetoCat::ac2g:
      case KinetoCat::other:
        // Kept: a host span of an unknown category on its lane.
        span(e, SpanKind::runtime);
        ++unknown_kept_;
        break;
    }
  }

  void device_op(const ChromeEvent& e, KinetoCat c) {
    const Lane& lane = raw_.lanes[e.lane];
    int64_t device = e.device != kNone ? e.device : lane_number(lane.pid).value_or(-1);
    int64_t stream = e.stream != kNone ? e.stream : lane_number(lane.tid).value_or(-1);
    if (device < 0 || device > 0xffff || stream < 0 || stream > 0xffffffffll) {
      skip("device ops without a valid device or stream");
      return;
    }
    PendingOp op;
    op.row.device = uint32_t(device);
    op.row.stream = uint32_t(stream);
    op.row.start = e.ts;
    op.row.dur = c == KinetoCat::kernel ? e.dur : copy_duration(e);
    op.row.name = e.name;
    op.row.kind = c == KinetoCat::kernel   ? DeviceOpKind::kernel
                  : c == KinetoCat::memcpy ? DeviceOpKind::memcpy
                                           : DeviceOpKind::memset;
    op.bytes = c == KinetoCat::kernel ? 0 : e.bytes;
    op.correlation = e.correlation;
    op.lane = e.lane;
    if (c == KinetoCat::kernel && e.comm != 0) pending_collectives_.push_back({ops_.size(), e.comm - 1});
    if (c == KinetoCat::memcpy) {
      parse_memcpy_name(strings_.text(e.name), op.row.copy_kind, op.host_memory);
      if (op.row.copy_kind == CopyKind::none && e.arg_kind != 0) {
        op.row.copy_kind = copy_kind_of(strings_.text(e.arg_kind));  // ROCm: args.kind "HtoD"
      }
    }
    ops_.push_back(op);
  }

  // gloo runs a collective on a thread of its own and marks it
  // "gloo:all_reduce": the span is the collective, from the moment this
  // rank's gloo began it. PyTorch gives no group or size with it.
  void host_collective(const ChromeEvent& e) {
    std::string_view op = strings_.text(e.name).substr(kGlooPrefix.size());
    out_.collectives.push_back({.process_group = strings_.intern(""),
                                .start = e.ts,
                                .dur = std::max<int64_t>(e.dur, 0),
                                .name = strings_.intern(op),
                                .issued = e.ts});
  }

  // NCCL kernels that carry their collective's arguments: one collective
  // each, issued when its launch began (or when it started, unlinked).
  void device_collectives() {
    if (pending_collectives_.empty()) return;
    std::unordered_map<uint64_t, int64_t> launched;
    for (const LaunchRow& l : out_.launches) launched.emplace(l.correlation, l.start);
    for (const auto& [op_index, comm_index] : pending_collectives_) {
      const PendingOp& op = ops_[op_index];
      const ChromeComm& c = raw_.comms[comm_index];
      auto it = op.correlation == kNone ? launched.end() : launched.find(uint64_t(op.correlation));
      int64_t element = element_bytes(strings_.text(c.dtype));
      // A count past 2^60 bytes is no message: kept at 2^60, for the row to
      // be left out and counted with the rows the reader would refuse.
      auto bytes = [&](int64_t n) {
        if (n == kNone || n < 0 || element == 0) return int64_t(0);
        return n >= kMaxTableTotal / element ? kMaxTableTotal : n * element;
      };
      out_.collectives.push_back(
          {.process_group = c.group,
           .start = op.row.start,
           .dur = op.row.dur,
           .name = c.name,
           .in_bytes = bytes(c.in_nelems),
           .out_bytes = bytes(c.out_nelems),
           .group_size = c.group_size > 0 && c.group_size < (1 << 24) ? uint32_t(c.group_size) : 0,
           .issued = it == launched.end() ? op.row.start : it->second,
           .on_device = true,
           .device = op.row.device,
           .stream = op.row.stream});
    }
  }

  // Device Type 0 is the host (Kineto writes Device Id -1 for it): its
  // events go to a device "cpu" numbered after the GPUs once they are known.
  void memory(const ChromeEvent& e) {
    bool host = e.device_type == 0;
    if (!host && (e.device == kNone || e.device < 0 || e.device > 0xffff)) {
      skip("[memory] events of a device with no valid Device Id");
      return;
    }
    MemoryEventRow m;
    m.device = host ? 0 : uint32_t(e.device);
    if (host) host_memory_rows_.push_back(out_.memory.size());
    m.time = e.ts;
    int64_t bytes = e.bytes == kNone ? 0 : e.bytes;
    m.kind = bytes < 0 ? MemoryEventKind::free : MemoryEventKind::alloc;
    m.bytes = bytes < 0 ? -bytes : bytes;
    m.address = e.addr == kNone ? 0 : uint64_t(e.addr);
    m.allocated = e.total_allocated == kNone ? 0 : e.total_allocated;
    m.reserved = e.total_reserved == kNone ? 0 : e.total_reserved;
    out_.memory.push_back(m);
    if (!host) memory_devices_.insert(m.device);
  }

  // Events without args.correlation take it from the ac2g flow that ends
  // on them.
  void link_flows() {
    bool needed = std::any_of(ops_.begin(), ops_.end(), [](const PendingOp& op) { return op.correlation == kNone; }) ||
                  std::any_of(calls_.begin(), calls_.end(), [](const ApiCall& c) { return c.correlation == kNone; });
    if (!needed || flows_.empty()) return;  // the rule: every event has its args.correlation
    std::unordered_map<std::pair<uint32_t, int64_t>, int64_t, FlowKeyHash> starts, ends;
    for (const ChromeEvent* f : flows_) (f->ph == 's' ? starts : ends)[{f->lane, f->ts}] = f->correlation;
    for (PendingOp& op : ops_) {
      if (op.correlation != kNone) continue;
      auto it = ends.find({op.lane, op.row.start});
      if (it != ends.end()) op.correlation = it->second;
    }
    for (ApiCall& call : calls_) {
      if (call.correlation != kNone) continue;
      auto it = starts.find({call.lane, call.start});
      if (it != starts.end()) call.correlation = it->second;
    }
  }

  // A cuda_sync record: what the call of its correlation waited for.
  void sync_record(const ChromeEvent& e) {
    SyncRecord r{.correlation = e.correlation, .kind = sync_kind(strings_.text(e.arg_kind)), .device = e.device};
    r.stream = e.stream;
    if (e.awaits != 0) {
      r.event_stream = raw_.awaited[e.awaits - 1].stream;
      r.record_correlation = raw_.awaited[e.awaits - 1].record_correlation;
    }
    sync_records_.push_back(r);
  }

  // Kineto's args.cuda_sync_kind.
  static std::optional<SyncKind> sync_kind(std::string_view kind) {
    if (kind == "Context Sync") return SyncKind::device;
    if (kind == "Stream Sync") return SyncKind::stream;
    if (kind == "Event Sync") return SyncKind::event;
    if (kind == "Stream Wait Event") return SyncKind::stream_wait;
    return std::nullopt;
  }

  void join_calls() { join_api_calls(calls_, ops_, sync_records_, strings_, out_); }

  void finish_ops() {
    for (const PendingOp& op : ops_) {
      auto key = std::make_pair(op.row.device, op.row.stream);
      if (!stream_lanes_.count(key)) stream_lanes_[key] = op.lane;
    }
    emit_device_ops(ops_, out_);
  }

  void devices_and_streams() {
    for (const DeviceRow& d : raw_.device_properties) {
      if (d.name.find("AMD") != std::string::npos || d.name.find("Radeon") != std::string::npos ||
          d.name.find("Instinct") != std::string::npos) {
        rocm_ = true;
      }
    }
    DeviceKind kind = rocm_ ? DeviceKind::rocm : DeviceKind::cuda;
    std::map<uint32_t, DeviceRow> devices;
    for (DeviceRow d : raw_.device_properties) {
      d.kind = kind;
      if (d.name.empty()) d.name = fmt::format("GPU {}", d.id);
      devices[d.id] = d;
    }
    auto ensure = [&](uint32_t id) {
      if (!devices.count(id)) devices[id] = DeviceRow{.id = id, .name = fmt::format("GPU {}", id), .kind = kind};
    };
    for (const auto& [key, lane] : stream_lanes_) ensure(key.first);
    for (uint32_t id : memory_devices_) ensure(id);
    if (!host_memory_rows_.empty()) {
      uint32_t host = devices.empty() ? 0 : devices.rbegin()->first + 1;
      devices[host] = DeviceRow{.id = host, .name = "cpu", .kind = DeviceKind::cpu};
      for (size_t row : host_memory_rows_) out_.memory[row].device = host;
      // PyTorch's CPU allocator totals only the blocks it saw while profiling.
      out_.meta[kMetaTotalsFromTraceStart] = std::to_string(host);
    }
    for (auto& [id, d] : devices) out_.devices.push_back(d);
    for (const auto& [key, lane] : stream_lanes_) {
      std::string name;
      if (auto it = raw_.thread_names.find(lane); it != raw_.thread_names.end()) name = std::string(trim(it->second));
      if (name.empty()) name = fmt::format("stream {}", key.second);
      out_.streams.push_back({.device = key.first, .stream = key.second, .name = name});
    }
  }

  void clock() {
    out_.meta["source_format"] = "kineto";
    if (raw_.base_time_ns != kNone) {
      out_.wall_clock_known = true;
      out_.wall_ns_at_zero = raw_.base_time_ns;
      out_.meta["clock"] = "kineto: host clock, ts in us after baseTimeNanoseconds";
    } else {
      guess_wall_clock(raw_, out_);
      out_.meta["clock"] = "kineto: host clock, ts in us";
    }
    if (unknown_kept_ > 0) out_.meta["generic_host_spans"] = std::to_string(unknown_kept_);
    host_op_numbering();
    distributed();
  }

  // How many numbers lo to hi are: the ids come from the file, and a span
  // beyond int64 is as good as unbounded.
  static int64_t id_span(int64_t lo, int64_t hi) {
    int64_t d = 0;
    if (__builtin_sub_overflow(hi, lo, &d) || d == INT64_MAX) return INT64_MAX;
    return d + 1;
  }

  // How many of the numbers Kineto gave its host ops the trace holds, over
  // how many the numbering spans: PyTorch numbers them one process-wide
  // sequence (threads interleave), older versions one per thread, so the
  // span is the smaller of the whole range and the threads' ranges added.
  void host_op_numbering() {
    if (host_op_ids_.size() < 2) return;
    std::sort(host_op_ids_.begin(), host_op_ids_.end());
    host_op_ids_.erase(std::unique(host_op_ids_.begin(), host_op_ids_.end()), host_op_ids_.end());
    std::vector<int64_t> all;
    all.reserve(host_op_ids_.size());
    int64_t per_thread = 0;
    for (size_t i = 0; i < host_op_ids_.size();) {
      size_t j = i;
      while (j < host_op_ids_.size() && host_op_ids_[j].first == host_op_ids_[i].first)
        all.push_back(host_op_ids_[j++].second);
      int64_t thread_span = id_span(host_op_ids_[i].second, host_op_ids_[j - 1].second);
      if (__builtin_add_overflow(per_thread, thread_span, &per_thread)) per_thread = INT64_MAX;
      i = j;
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    int64_t whole = id_span(all.front(), all.back());
    out_.meta[kMetaHostOpIds] = std::to_string(all.size());
    out_.meta[kMetaHostOpIdSpan] = std::to_string(std::max<int64_t>(std::min(whole, per_thread), int64_t(all.size())));
  }

  // The rank of a torch.distributed job this trace is, and its host.
  void distributed() {
    if (!raw_.host_name.empty()) out_.meta["hostname"] = raw_.host_name;
    if (!raw_.distributed) return;
    const ChromeTrace::Distributed& d = *raw_.distributed;
    if (d.rank != kNone) out_.meta["rank"] = std::to_string(d.rank);
    if (d.world_size != kNone) out_.meta["world_size"] = std::to_string(d.world_size);
    if (!d.backend.empty()) out_.meta["distributed_backend"] = d.backend;
    out_.meta["distributed_info"] = d.json;
  }

  struct FlowKeyHash {
    size_t operator()(const std::pair<uint32_t, int64_t>& k) const {
      return std::hash<uint64_t>{}(uint64_t(k.second) * 31 + k.first);
    }
  };

  ChromeTrace& raw_;
  StringPool& strings_;
  ImportedTrace& out_;
  LaneThreads threads_;
  std::unordered_map<StringId, KinetoCat> cats_;
  StringId last_cat_id_ = ~StringId(0);
  KinetoCat last_cat_ = KinetoCat::other;
  std::vector<ApiCall> calls_;
  std::vector<PendingOp> ops_;
  std::vector<SyncRecord> sync_records_;
  std::vector<const ChromeEvent*> flows_;  // ac2g flow events, in case some event lacks its correlation
  std::vector<std::pair<size_t, uint32_t>> pending_collectives_;  // (index in ops_, index in raw_.comms)
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> stream_lanes_;
  std::set<uint32_t> memory_devices_;     // GPUs with memory events
  std::vector<size_t> host_memory_rows_;  // out_.memory rows of host memory, numbered in devices_and_streams
  uint64_t unknown_kept_ = 0;
  std::vector<std::pair<uint32_t, int64_t>> host_op_ids_;  // (lane, External id) of cpu_op and user_annotation
  bool rocm_ = false;
};

}  // namespace

bool is_kineto_trace(const ChromeTrace& raw, const StringPool& strings) {
  if (raw.has_schema_version || !raw.device_properties.empty()) return true;
  std::unordered_set<StringId> seen;
  for (const ChromeEvent& e : raw.events) {
    if (e.cat == 0 || !seen.insert(e.cat).second) continue;
    if (is_kineto_marker(strings.text(e.cat))) return true;
  }
  return false;
}

void map_kineto(ChromeTrace& raw, StringPool& strings, ImportedTrace& out) { KinetoMapper(raw, strings, out).run(); }

}  // namespace loupe::prof::import
