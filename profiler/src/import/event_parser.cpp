#include "import/event_parser.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "import/decimal.h"
#include "import/imported_trace.h"
#include "import/json_values.h"
#include "loupe/prof/trace_format.h"

namespace loupe::prof::import {

// Parses batches with simdjson's On-Demand API into compact events. One per
// thread: it owns a simdjson parser and the batch-local string and lane
// tables.
struct EventParser::Impl {
  void parse(Batch& batch) {
    batch_ = &batch;
    batch.clear_results();
    strings_.clear();
    lanes_.clear();
    has_last_lane_ = false;
    batch.strings.push_back("");
    strings_.emplace("", 0);
    uint64_t current = batch.offset;
    try {
      od::document doc = parser_.iterate(batch.bytes.data(), batch.length, batch.bytes.size());
      for (auto element : doc.get_array()) {
        od::value v = element.value();
        current = batch.offset + uint64_t(v.raw_json_token().data() - batch.bytes.data());
        od::object event = v.get_object();
        read_event(event);
      }
    } catch (const simdjson::simdjson_error& e) {
      batch.failed = true;
      batch.error_offset = current;
      batch.error = fmt::format("malformed JSON in this event: {}", e.what());
    } catch (const TypeError& e) {
      batch.failed = true;
      batch.error_offset = current;
      batch.error = fmt::format("bad event: {}", e.what);
    } catch (const std::bad_alloc&) {
      batch.failed = true;
      batch.error_offset = current;
      batch.error = "out of memory while reading the events";
    }
  }

 private:
  uint32_t intern(std::string_view s) {
    auto [it, inserted] = strings_.try_emplace(s, uint32_t(batch_->strings.size()));
    if (inserted) batch_->strings.push_back(s);
    return it->second;
  }

  uint32_t lane(LaneId pid, LaneId tid) {
    if (has_last_lane_ && pid == last_pid_ && tid == last_tid_) return last_lane_;  // runs of one lane
    uint64_t key = uint64_t(pid.value) * 0x9e3779b97f4a7c15ull ^ uint64_t(tid.value) * 0xbf58476d1ce4e5b9ull ^
                   (uint64_t(pid.is_string) << 1 | uint64_t(tid.is_string));
    std::vector<uint32_t>& bucket = lanes_[key];
    uint32_t id = ~0u;
    for (uint32_t candidate : bucket) {
      if (batch_->lanes[candidate].pid == pid && batch_->lanes[candidate].tid == tid) id = candidate;
    }
    if (id == ~0u) {
      id = uint32_t(batch_->lanes.size());
      batch_->lanes.push_back({pid, tid});
      bucket.push_back(id);
    }
    has_last_lane_ = true;
    last_pid_ = pid;
    last_tid_ = tid;
    last_lane_ = id;
    return id;
  }

  LaneId lane_id(od::value& v, std::string_view field) {
    std::string_view tok = v.raw_json_token();
    if (!tok.empty() && tok[0] == '"') return {int64_t(intern(string_of(v, field, &batch_->owned))), true};
    std::optional<int64_t> n = lenient_int(v);
    if (!n) throw TypeError{fmt::format("'{}' is neither a number nor a string", field)};
    return {*n, false};
  }

  // `numbers`: also collect the numeric arguments (a counter's series).
  void read_args(od::object& args, ChromeEvent& e, std::string_view& name_arg, std::string_view& kind_arg,
                 bool numbers) {
    numeric_args_.clear();
    for (auto f : args) {
      od::field field = std::move(f);
      std::string_view k = key_text(field);
      od::value v = field.value();
      od::json_type type = type_of(v);
      if (type == od::json_type::object || type == od::json_type::array) continue;
      bool is_string = type == od::json_type::string;
      if (read_id_arg(k, v, e) || (is_string && read_text_arg(k, v, name_arg, kind_arg)) ||
          read_memory_arg(k, v, type, e) || read_comm_arg(k, v, is_string) || read_awaited_arg(k, v)) {
        continue;
      }
      if (numbers && type == od::json_type::number) numeric_args_.emplace_back(k, v.raw_json_token());
    }
  }

  // An argument that places the event (its device, stream, step,
  // correlation) into `e`; false for any other. Keys are switched on by
  // length first: this runs for every argument of every event.
  static bool read_id_arg(std::string_view k, od::value& v, ChromeEvent& e) {
    switch (k.size()) {
      case 6:
        if (k == "device") e.device = lenient_int(v).value_or(kNone);
        else if (k == "stream") e.stream = lenient_int(v).value_or(kNone);
        else return false;
        return true;
      case 8:
        if (k != "step_num") return false;
        e.step = lenient_int(v).value_or(kNone);
        return true;
      case 9:
        if (k == "device_id" || k == "Device Id") e.device = lenient_int(v).value_or(kNone);
        else if (k == "stream_id") e.stream = lenient_int(v).value_or(kNone);
        else return false;
        return true;
      case 11:
        if (k == "correlation") e.correlation = lenient_int(v).value_or(kNone);
        else if (k == "External id") e.external = lenient_int(v).value_or(kNone);
        else if (k == "Device Type") e.device_type = lenient_int(v).value_or(kNone);
        else return false;
        return true;
      case 14:
        if (k == "correlation_id") e.correlation = lenient_int(v).value_or(kNone);
        else if (k == "device_ordinal") e.device = lenient_int(v).value_or(kNone);
        else return false;
        return true;
      default: return false;  // no argument read here has a key of another length
    }
  }

  // A string argument that names the event or says its kind into
  // `name_arg` or `kind_arg`; false for any other.
  bool read_text_arg(std::string_view k, od::value& v, std::string_view& name_arg, std::string_view& kind_arg) {
    switch (k.size()) {
      case 4:
        if (k == "name") {
          name_arg = string_of(v, "args.name", &batch_->owned);
        } else if (k == "kind") {
          if (kind_arg.empty()) kind_arg = string_of(v, "args.kind", &batch_->owned);
        } else {
          return false;
        }
        return true;
      case 6:
        if (k != "labels") return false;
        kind_arg = string_of(v, "args.labels", &batch_->owned);
        return true;
      case 14:
        if (k == "cuda_sync_kind") {
          kind_arg = string_of(v, "args.cuda_sync_kind", &batch_->owned);
        } else if (k == "memcpy_details" || k == "memset_details") {
          kind_arg = string_of(v, "args.memcpy_details", &batch_->owned);
        } else {
          return false;
        }
        return true;
      default: return false;  // no argument read here has a key of another length
    }
  }

  // An argument about bytes (a copy's size and bandwidth, an allocation's
  // address and totals) into `e`; false for any other.
  static bool read_memory_arg(std::string_view k, od::value& v, od::json_type type, ChromeEvent& e) {
    switch (k.size()) {
      case 4:
        if (k == "size") e.bytes = lenient_int(v).value_or(kNone);
        else if (k == "Addr") e.addr = lenient_int(v).value_or(kNone);
        else return false;
        return true;
      case 5:
        if (k != "bytes" && k != "Bytes") return false;
        e.bytes = lenient_int(v).value_or(kNone);
        return true;
      case 9:
        if (k != "num_bytes") return false;
        e.bytes = lenient_int(v).value_or(kNone);
        return true;
      case 14:
        if (k != "Total Reserved") return false;
        e.total_reserved = lenient_int(v).value_or(kNone);
        return true;
      case 15:
        if (k != "Total Allocated") return false;
        e.total_allocated = lenient_int(v).value_or(kNone);
        return true;
      case 23: {
        if (k != "memory bandwidth (GB/s)") return false;
        double gbps = 0;  // "N/A" when CUPTI measured no time
        if (type == od::json_type::number && v.get_double().get(gbps) == simdjson::SUCCESS) e.bandwidth = gbps;
        return true;
      }
      default: return false;  // no argument read here has a key of another length
    }
  }

  // A collective's argument (ChromeComm) into comm_; false for any other.
  bool read_comm_arg(std::string_view k, od::value& v, bool is_string) {
    switch (k.size()) {
      case 5:
        if (k != "dtype" || !is_string) return false;
        comm_.dtype = string_of(v, "args.dtype", &batch_->owned);
        return true;
      case 10:
        if (k != "Group size") return false;
        comm_.group_size = lenient_int(v).value_or(kNone);
        return true;
      case 13:
        if (k != "In msg nelems") return false;
        comm_.in_nelems = lenient_int(v).value_or(kNone);
        return true;
      case 14:
        if (k != "Out msg nelems") return false;
        comm_.out_nelems = lenient_int(v).value_or(kNone);
        return true;
      case 15:
        if (k != "Collective name" || !is_string) return false;
        comm_.name = string_of(v, "args.Collective name", &batch_->owned);
        return true;
      case 18:
        if (k != "Process Group Name" || !is_string) return false;
        comm_.group = string_of(v, "args.Process Group Name", &batch_->owned);
        return true;
      default: return false;  // no argument read here has a key of another length
    }
  }

  // The event a cuda_sync record waited for (ChromeAwaited) into
  // awaited_; false for any other argument. Kineto writes -1 for "none".
  bool read_awaited_arg(std::string_view k, od::value& v) {
    auto id = [&] {
      int64_t n = lenient_int(v).value_or(kNone);
      return n < 0 ? kNone : n;
    };
    switch (k.size()) {
      case 14:
        if (k != "wait_on_stream") return false;
        awaited_.stream = id();
        return true;
      case 33:
        if (k != "wait_on_cuda_event_record_corr_id") return false;
        awaited_.record_correlation = id();
        return true;
      default: return false;  // no argument read here has a key of another length
    }
  }

  // The fields of one event as they stand in the JSON, before they are
  // checked and converted.
  struct RawFields {
    std::string_view ph, name, cat, ts, dur, id, bp, name_arg, kind_arg;
    LaneId pid, tid;
  };

  // Reads the fields loupe uses (and, through read_args, the arguments);
  // false for an empty object.
  bool read_fields(od::object& object, ChromeEvent& e, RawFields& r) {
    bool any_field = false;
    for (auto f : object) {
      any_field = true;
      od::field field = std::move(f);
      std::string_view k = key_text(field);
      od::value v = field.value();
      switch (k.size()) {
        case 2:
          if (k == "ph") r.ph = string_of(v, "ph", &batch_->owned);
          else if (k == "ts") r.ts = number_text(v, "ts");
          else if (k == "id") r.id = v.raw_json_token();
          else if (k == "bp") r.bp = string_of(v, "bp", &batch_->owned);
          break;
        case 3:
          if (k == "pid") r.pid = lane_id(v, "pid");
          else if (k == "tid") r.tid = lane_id(v, "tid");
          else if (k == "cat") r.cat = text_of(v, "cat", &batch_->owned);
          else if (k == "dur") r.dur = number_text(v, "dur");
          break;
        case 4:
          if (k == "name") r.name = text_of(v, "name", &batch_->owned);
          else if (k == "args" && type_of(v) == od::json_type::object) {
            od::object args = v.get_object();
            // Counter series are only needed for "C" events (or when "ph"
            // comes after "args", as some writers order them).
            read_args(args, e, r.name_arg, r.kind_arg, r.ph.empty() || r.ph == "C");
          }
          break;
        default: break;  // no field read here has a key of another length
      }
    }
    return any_field;
  }

  void read_metadata(const RawFields& r) {
    ++batch_->metadata_events;
    if (r.name == "process_name") {
      batch_->metadata.push_back({Batch::Meta::process_name, r.pid, r.tid, intern(r.name_arg)});
    } else if (r.name == "process_labels") {
      batch_->metadata.push_back({Batch::Meta::process_labels, r.pid, r.tid, intern(r.kind_arg)});
    } else if (r.name == "thread_name") {
      batch_->metadata.push_back({Batch::Meta::thread_name, r.pid, r.tid, intern(r.name_arg)});
    }
  }

  static bool is_known_phase(char kind) {
    switch (kind) {
      case 'X':
      case 'B':
      case 'E':
      case 'i':
      case 'I':
      case 'n':
      case 'b':
      case 'e':
      case 's':
      case 't':
      case 'f':
      case 'C': return true;
      default: return false;  // any other character: a phase loupe does not read
    }
  }

  // A counter event: one sample per numeric argument.
  void read_counter(const ChromeEvent& e, std::string_view name) {
    StringId base = intern(name);
    for (const auto& [key, text] : numeric_args_) {
      std::optional<int64_t> milli = scaled_decimal(text, 3);
      double value = milli ? double(*milli) / 1000.0 : 0.0;
      if (!milli) {
        value = std::strtod(std::string(text).c_str(), nullptr);  // huge or tiny: a double is all it is
      }
      if (!std::isfinite(value)) {
        ++batch_->skipped["counter values that are not finite"];
        continue;
      }
      StringId series =
          numeric_args_.size() == 1 ? base : intern(batch_->owned.emplace_back(fmt::format("{}.{}", name, key)));
      batch_->counters.push_back({e.ts, e.lane, series, value});
    }
  }

  // A complete event's duration; false (the event skipped) when it ends
  // outside the times a trace can hold.
  bool read_duration(ChromeEvent& e, std::string_view dur) {
    if (dur.empty()) throw TypeError{"the complete event (ph 'X') has no 'dur'"};
    ScaledDecimal d = parse_scaled_decimal(dur, 3);
    if (!d.value && !d.out_of_range) throw TypeError{fmt::format("'dur' is not a number: {}", dur)};
    e.dur = d.value.value_or(0);
    int64_t end = 0;
    if (d.out_of_range || __builtin_add_overflow(e.ts, e.dur, &end) || !is_trace_time(end)) {
      ++batch_->skipped[kTimeOutOfRange];
      return false;
    }
    return true;
  }

  void read_event(od::object& object) {
    ++batch_->total_events;
    ChromeEvent e;
    RawFields r;
    numeric_args_.clear();
    comm_ = {};
    awaited_ = {};
    if (!read_fields(object, e, r)) {
      --batch_->total_events;  // "{}": XLA ends its event list with one
      return;
    }
    if (r.ph.empty()) throw TypeError{"the event has no 'ph'"};
    char kind = r.ph.size() == 1 ? r.ph[0] : '?';
    if (kind == 'M') return read_metadata(r);
    if (!is_known_phase(kind)) {
      ++batch_->skipped[fmt::format("events of phase '{}'", r.ph)];
      return;
    }
    if (r.ts.empty()) throw TypeError{fmt::format("the event (ph '{}') has no 'ts'", r.ph)};
    ScaledDecimal t = parse_scaled_decimal(r.ts, 3);
    if (!t.value && !t.out_of_range) throw TypeError{fmt::format("'ts' is not a number: {}", r.ts)};
    e.ts = t.value.value_or(0);
    if (t.out_of_range || !is_trace_time(e.ts)) {
      ++batch_->skipped[kTimeOutOfRange];
      return;
    }
    e.lane = lane(r.pid, r.tid);
    if (kind == 'C') return read_counter(e, r.name);
    if (kind == 'X' && !read_duration(e, r.dur)) return;
    if (kind == 's' || kind == 't' || kind == 'f') {
      if (!r.id.empty()) {
        std::string_view idt = r.id;
        if (idt[0] == '"') idt = idt.substr(1, idt.find_last_of('"') - 1);
        e.correlation = parse_integer(idt).value_or(kNone);
      }
      if (!r.bp.empty()) e.bp = r.bp[0];
    }
    e.ph = kind;
    batch_->min_ts = std::min(batch_->min_ts, e.ts);
    if (kind == 'B' || kind == 'E') ++batch_->begin_end_events;
    e.name = intern(r.name);
    e.cat = r.cat.empty() ? 0 : intern(r.cat);
    if (!r.kind_arg.empty()) e.arg_kind = intern(r.kind_arg);
    if (!r.name_arg.empty()) e.arg_name = intern(r.name_arg);
    if (!comm_.name.empty()) {
      batch_->comms.push_back({intern(comm_.name), intern(comm_.group), intern(comm_.dtype), comm_.in_nelems,
                               comm_.out_nelems, comm_.group_size});
      e.comm = uint32_t(batch_->comms.size());
    }
    if (awaited_.stream != kNone || awaited_.record_correlation != kNone) {
      batch_->awaited.push_back(awaited_);
      e.awaits = uint32_t(batch_->awaited.size());
    }
    batch_->events.push_back(e);
  }

  Batch* batch_ = nullptr;
  od::parser parser_;
  std::unordered_map<std::string_view, uint32_t> strings_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> lanes_;
  bool has_last_lane_ = false;
  LaneId last_pid_, last_tid_;
  uint32_t last_lane_ = 0;
  std::vector<std::pair<std::string_view, std::string_view>> numeric_args_;
  // The current event's collective arguments, if it has any.
  struct RawComm {
    std::string_view name, group, dtype;
    int64_t in_nelems = kNone, out_nelems = kNone, group_size = kNone;
  } comm_;
  ChromeAwaited awaited_;  // the current event's, if it is a sync record
};

EventParser::EventParser() : impl_(std::make_unique<Impl>()) {}
EventParser::~EventParser() = default;
void EventParser::parse(Batch& batch) { impl_->parse(batch); }

}  // namespace loupe::prof::import
