#include "import/chrome_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace loupe::prof::import {

uint32_t LaneThreads::thread(uint32_t lane) {
  if (lane == last_lane_) return last_thread_;  // events come in runs of one lane
  auto [it, inserted] = by_lane_.try_emplace(lane, uint32_t(lanes_.size() + 1));
  if (inserted) lanes_.push_back(lane);
  last_lane_ = lane;
  last_thread_ = it->second;
  return it->second;
}

void LaneThreads::emit(ImportedTrace& out) const {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& lane = raw_.lanes[lanes_[i]];
    ThreadRow row;
    row.id = uint32_t(i + 1);
    row.process = lane_number(lane.pid).value_or(0);
    row.os_tid = lane_number(lane.tid).value_or(0);
    if (auto it = raw_.thread_names.find(lanes_[i]); it != raw_.thread_names.end() && !it->second.empty()) {
      row.name = it->second;
    } else if (lane.tid.is_string) {
      row.name = lane_id_text(lane.tid, strings_);
    } else if (auto p = raw_.process_names.find(lane.pid); p != raw_.process_names.end() && !p->second.empty()) {
      row.name = fmt::format("{} thread {}", p->second, lane.tid.value);
    } else {
      row.name = fmt::format("thread {}", lane.tid.value);
    }
    out.threads.push_back(std::move(row));
  }
}

std::string lane_id_text(LaneId id, const StringPool& strings) {
  return id.is_string ? std::string(strings.text(StringId(id.value))) : std::to_string(id.value);
}

void add_host_instant(const ChromeEvent& e, LaneThreads& threads, ImportedTrace& out) {
  out.instants.push_back({.thread = threads.thread(e.lane), .time = e.ts, .name = e.name, .kind = SpanKind::user});
}

void finish_mapping(const ChromeTrace& raw, const LaneThreads& threads, ImportedTrace& out) {
  for (const ChromeCounter& c : raw.counters) out.counters.push_back({.name = c.name, .time = c.ts, .value = c.value});
  assign_depths(out.host_spans);
  threads.emit(out);
  for (const auto& [why, n] : raw.skipped) out.skipped[why] += n;
  out.source_events = raw.total_events;
}

void guess_wall_clock(const ChromeTrace& raw, ImportedTrace& out) {
  int64_t first = raw.min_ts;
  if (first != std::numeric_limits<int64_t>::max() && first > int64_t(946684800) * 1'000'000'000) {
    out.wall_clock_known = true;
    out.wall_ns_at_zero = 0;
  }
}

void complete_begin_end(ChromeTrace& raw) {
  if (raw.begin_end_events == 0) return;
  std::map<uint32_t, std::vector<size_t>> open;  // lane -> indices of open "B" events
  std::vector<uint8_t> drop(raw.events.size(), 0);
  bool any = false;
  for (size_t i = 0; i < raw.events.size(); ++i) {
    ChromeEvent& e = raw.events[i];
    if (e.ph == 'B') {
      open[e.lane].push_back(i);
      any = true;
    } else if (e.ph == 'E') {
      any = true;
      drop[i] = 1;
      auto& stack = open[e.lane];
      if (stack.empty()) {
        ++raw.skipped["'E' events without a matching 'B'"];
        continue;
      }
      ChromeEvent& b = raw.events[stack.back()];
      stack.pop_back();
      b.ph = 'X';
      b.dur = std::max<int64_t>(0, e.ts - b.ts);
    }
  }
  if (!any) return;
  for (auto& [lane, stack] : open) {
    for (size_t i : stack) {
      drop[i] = 1;
      ++raw.skipped["'B' events without a matching 'E'"];
    }
  }
  size_t out = 0;
  for (size_t i = 0; i < raw.events.size(); ++i) {
    if (!drop[i]) raw.events[out++] = raw.events[i];
  }
  raw.events.resize(out);
}

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

bool is_sync_call(std::string_view name) { return name.ends_with("Synchronize"); }

bool is_kernel_launch_call(std::string_view name) {
  return contains(name, "LaunchKernel") || contains(name, "LaunchCooperativeKernel") || contains(name, "GraphLaunch");
}

bool is_blocking_copy_call(std::string_view name) {
  return (contains(name, "Memcpy") || contains(name, "memcpy")) && !contains(name, "Async");
}

bool is_poll_call(std::string_view name) { return contains(name, "Query"); }

namespace {

// The sync records by the correlation of their call, and the start of
// each call that recorded an event one of them awaits.
class SyncJoin {
 public:
  SyncJoin(const std::vector<ApiCall>& calls, const std::vector<SyncRecord>& records) : records_(records) {
    std::unordered_set<int64_t> awaited;
    for (uint32_t i = 0; i < records.size(); ++i) {
      if (records[i].correlation != kNone) by_correlation_.try_emplace(records[i].correlation, i);
      if (records[i].record_correlation != kNone) awaited.insert(records[i].record_correlation);
    }
    for (const ApiCall& call : calls) {
      if (call.correlation != kNone && awaited.count(call.correlation)) recorded_at_[call.correlation] = call.start;
    }
    claimed_.assign(records.size(), false);
  }

  // The record of `call`'s correlation, or null; marks it claimed.
  const SyncRecord* claim(const ApiCall& call) {
    auto it = call.correlation == kNone ? by_correlation_.end() : by_correlation_.find(call.correlation);
    if (it == by_correlation_.end()) return nullptr;
    claimed_[it->second] = true;
    return &records_[it->second];
  }

  void add_row(const ApiCall& call, const SyncRecord& r, SyncKind kind, ImportedTrace& out) const {
    auto in = [](int64_t v, int64_t max) { return v >= 0 && v < max; };
    auto at = r.record_correlation == kNone ? recorded_at_.end() : recorded_at_.find(r.record_correlation);
    out.syncs.push_back({.thread = call.thread,
                         .start = call.start,
                         .dur = call.dur,
                         .kind = kind,
                         .device = in(r.device, 0x10000) ? uint32_t(r.device) : kUnknownDevice,
                         .stream = in(r.stream, kUnknownStream) ? uint32_t(r.stream) : kUnknownStream,
                         .event_stream = in(r.event_stream, kUnknownStream) ? uint32_t(r.event_stream) : kUnknownStream,
                         .recorded_at = at == recorded_at_.end() ? kUnknownTime : at->second});
  }

  void count_unclaimed(ImportedTrace& out) const {
    for (size_t i = 0; i < records_.size(); ++i) {
      if (!claimed_[i]) ++out.skipped["sync records without their API call"];
    }
  }

 private:
  const std::vector<SyncRecord>& records_;
  std::unordered_map<int64_t, uint32_t> by_correlation_;
  std::unordered_map<int64_t, int64_t> recorded_at_;
  std::vector<bool> claimed_;
};

// A call that launched no device op: a wait, a stream made to wait, a
// poll or any other runtime call.
void add_other_call(const ApiCall& call, SyncJoin& syncs, const StringPool& strings, ImportedTrace& out) {
  std::string_view name = strings.text(call.name);
  const SyncRecord* record = syncs.claim(call);
  bool polls = is_poll_call(name);
  if (record && polls) ++out.skipped["sync records of calls that poll (cudaEventQuery), which do not wait"];
  if (record && !polls && !record->kind) ++out.skipped["sync records of a kind loupe does not know"];
  if (record && !polls && record->kind) syncs.add_row(call, *record, *record->kind, out);
  bool stream_waits = record && record->kind == SyncKind::stream_wait;
  bool waits = !polls && !stream_waits && (record || is_sync_call(name));
  out.host_spans.push_back({.thread = call.thread,
                            .start = call.start,
                            .dur = call.dur,
                            .name = call.name,
                            .kind = waits ? SpanKind::wait : SpanKind::runtime});
}

}  // namespace

void join_api_calls(const std::vector<ApiCall>& calls, std::vector<PendingOp>& ops,
                    const std::vector<SyncRecord>& sync_records, const StringPool& strings, ImportedTrace& out) {
  std::unordered_map<int64_t, uint32_t> op_by_correlation;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    if (ops[i].correlation != kNone) op_by_correlation.try_emplace(ops[i].correlation, i);
  }
  SyncJoin syncs(calls, sync_records);
  for (const ApiCall& call : calls) {
    auto it = call.correlation == kNone ? op_by_correlation.end() : op_by_correlation.find(call.correlation);
    if (it == op_by_correlation.end() && is_kernel_launch_call(strings.text(call.name))) {
      // A launch whose kernel the trace lacks is still a launch.
      out.launches.push_back({.thread = call.thread,
                              .start = call.start,
                              .dur = call.dur,
                              .name = call.name,
                              .device = kUnknownDevice,
                              .stream = kUnknownStream,
                              .correlation = call.correlation == kNone ? 0 : uint64_t(call.correlation)});
      continue;
    }
    if (it == op_by_correlation.end()) {
      add_other_call(call, syncs, strings, out);
      continue;
    }
    PendingOp& op = ops[it->second];
    if (op.bytes == kNone && call.size != kNone) op.bytes = call.size;  // ROCm: hipMemcpy*'s size
    uint64_t correlation = uint64_t(call.correlation);
    out.launches.push_back({.thread = call.thread,
                            .start = call.start,
                            .dur = call.dur,
                            .name = call.name,
                            .device = op.row.device,
                            .stream = op.row.stream,
                            .correlation = correlation});
    if (op.row.kind == DeviceOpKind::memcpy) {
      // A device-to-host copy into pageable memory returns only when it is
      // done, even through cudaMemcpyAsync (CUDA's documented behaviour).
      bool blocking = is_blocking_copy_call(strings.text(call.name)) ||
                      (op.row.copy_kind == CopyKind::device_to_host && op.host_memory == HostMemory::pageable);
      TransferRow t;
      t.thread = call.thread;
      t.start = call.start;
      t.dur = call.dur;
      t.device = op.row.device;
      t.direction = op.row.copy_kind;
      t.bytes = op.bytes == kNone ? 0 : op.bytes;
      t.synchronous = blocking;
      t.host_memory = op.host_memory;
      t.correlation = correlation;
      out.transfers.push_back(t);
    }
  }
  syncs.count_unclaimed(out);
}

void emit_device_ops(std::vector<PendingOp>& ops, ImportedTrace& out) {
  out.device_ops.reserve(out.device_ops.size() + ops.size());
  for (PendingOp& op : ops) {
    op.row.bytes = op.bytes == kNone ? 0 : op.bytes;
    op.row.correlation = op.correlation == kNone ? 0 : uint64_t(op.correlation);
    out.device_ops.push_back(op.row);
  }
  std::vector<PendingOp>().swap(ops);
}

}  // namespace loupe::prof::import
