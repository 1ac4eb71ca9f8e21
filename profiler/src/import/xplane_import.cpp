// XProf's XSpace (`<host>.xplane.pb`, what jax.profiler writes and XProf
// reads), turned into the Chrome events JAX's trace-viewer JSON holds, then
// mapped as that JSON is (jax_import.cpp): XProf makes its JSON from this
// file, one event per XEvent, so both give the same trace. The schema
// subset read, with the field numbers of XProf's xplane.proto:
//
//   XSpace         planes = 1 (XPlane), hostnames = 4
//   XPlane         id = 1, name = 2, lines = 3 (XLine),
//                  event_metadata = 4 (map<int64, XEventMetadata>),
//                  stat_metadata = 5 (map<int64, XStatMetadata>)
//   XLine          id = 1, name = 2, timestamp_ns = 3, events = 4 (XEvent),
//                  display_name = 11
//   XEvent         metadata_id = 1, offset_ps = 2, duration_ps = 3,
//                  stats = 4 (XStat)
//   XStat          metadata_id = 1, double_value = 2, uint64_value = 3,
//                  int64_value = 4, str_value = 5, bytes_value = 6,
//                  ref_value = 7 (an XStatMetadata id whose name is the value)
//   XEventMetadata id = 1, name = 2, display_name = 4, stats = 5
//   XStatMetadata  id = 1, name = 2
//   a map entry    key = 1, value = 2
#include <fmt/format.h>

#include <cstring>
#include <unordered_map>

#include "import/mappings.h"
#include "import/protobuf_reader.h"

namespace loupe::prof::import {

namespace {

// An XStat's value, as far as the mapping reads it: a number, a string, or
// a reference (the name of the XStatMetadata `number` is the value).
struct StatValue {
  uint32_t metadata = 0;
  int64_t number = kNone;
  std::string_view text;
  bool reference = false;
};

struct EventMetadata {
  StringId name = 0;
  std::vector<StatValue> stats;
};

// One plane's dictionaries: its event names and stat names by id.
struct PlaneMetadata {
  std::unordered_map<int64_t, EventMetadata> events;
  std::unordered_map<int64_t, std::string_view> stats;
};

int64_t as_int(uint64_t v) {
  int64_t i;
  std::memcpy(&i, &v, sizeof i);
  return i;
}

StatValue read_stat(const ProtoField& field) {
  StatValue s;
  ProtoReader r(field);
  for (ProtoField f; r.next(f);) {
    switch (f.number) {
      case 1: s.metadata = uint32_t(std::min<uint64_t>(f.varint, UINT32_MAX)); break;
      case 2: {
        double d;
        std::memcpy(&d, &f.varint, sizeof d);
        if (d >= -9.2e18 && d <= 9.2e18) s.number = int64_t(d);
        break;
      }
      case 3:
      case 4: s.number = as_int(f.varint); break;
      case 5:
      case 6: s.text = f.bytes; break;
      case 7:
        s.number = as_int(f.varint);
        s.reference = true;
        break;
      default: break;
    }
  }
  return s;
}

// A map<int64, Message> entry: its key, and its value's field.
std::pair<int64_t, ProtoField> map_entry(const ProtoField& field) {
  std::pair<int64_t, ProtoField> entry{0, {}};
  ProtoReader r(field);
  for (ProtoField f; r.next(f);) {
    if (f.number == 1) entry.first = as_int(f.varint);
    if (f.number == 2) entry.second = f;
  }
  return entry;
}

void read_event_metadata(const ProtoField& field, StringPool& strings, PlaneMetadata& plane) {
  auto [id, value] = map_entry(field);
  EventMetadata m;
  std::string_view name, display;
  ProtoReader r(value);
  for (ProtoField f; r.next(f);) {
    if (f.number == 2) name = f.bytes;
    if (f.number == 4) display = f.bytes;
    if (f.number == 5) m.stats.push_back(read_stat(f));
  }
  m.name = strings.intern(display.empty() ? name : display);
  plane.events[id] = std::move(m);
}

void read_stat_metadata(const ProtoField& field, PlaneMetadata& plane) {
  auto [id, value] = map_entry(field);
  ProtoReader r(value);
  for (ProtoField f; r.next(f);) {
    if (f.number == 2) plane.stats[id] = f.bytes;
  }
}

// The stats the JAX mapping reads, into the event's arguments as the JSON
// reader names them.
class StatNames {
 public:
  StatNames(const PlaneMetadata& plane, StringPool& strings) : plane_(plane), strings_(strings) {}

  void apply(const StatValue& s, ChromeEvent& e) {
    std::string_view name = name_of(s.metadata);
    std::string_view text = s.reference ? name_of(s.number) : s.text;
    int64_t number = s.reference ? kNone : s.number;
    if (name == "correlation_id") e.correlation = number;
    else if (name == "device_id" || name == "device_ordinal") e.device = number;
    else if (name == "stream_id") e.stream = number;
    else if (name == "step_num") e.step = number;
    else if (name == "bytes" || name == "size") e.bytes = number;
    else if (name == "memcpy_details" || name == "memset_details" || name == "kind") e.arg_kind = strings_.intern(text);
  }

 private:
  std::string_view name_of(int64_t id) const {
    auto it = plane_.stats.find(id);
    return it == plane_.stats.end() ? std::string_view() : it->second;
  }
  const PlaneMetadata& plane_;
  StringPool& strings_;
};

// An XEvent of `line` as a complete ("X") event: its time is the line's
// plus its offset (picoseconds, cut to nanoseconds as XProf does), its
// duration rounded to the nearest nanosecond, as the JSON's microseconds
// with six decimals read back.
void read_event(const ProtoField& field, int64_t line_ns, uint32_t lane, const PlaneMetadata& plane, StatNames& stats,
                ChromeTrace& out) {
  ChromeEvent e;
  e.ph = 'X';
  e.lane = lane;
  int64_t metadata = 0, offset_ps = 0, duration_ps = 0;
  std::vector<StatValue> own;
  ProtoReader r(field);
  for (ProtoField f; r.next(f);) {
    if (f.number == 1) metadata = as_int(f.varint);
    if (f.number == 2) offset_ps = as_int(f.varint);
    if (f.number == 3) duration_ps = as_int(f.varint);
    if (f.number == 4) own.push_back(read_stat(f));
  }
  if (offset_ps < 0 || duration_ps < 0) {
    ++out.skipped["XPlane events with a negative offset or duration"];
    return;
  }
  e.ts = line_ns + offset_ps / 1000;
  e.dur = duration_ps / 1000 + (duration_ps % 1000 >= 500 ? 1 : 0);
  if (auto it = plane.events.find(metadata); it != plane.events.end()) {
    e.name = it->second.name;
    for (const StatValue& s : it->second.stats) stats.apply(s, e);
  }
  for (const StatValue& s : own) stats.apply(s, e);
  out.min_ts = std::min(out.min_ts, e.ts);
  out.events.push_back(e);
  ++out.total_events;
}

void read_line(const ProtoField& field, int64_t pid, const PlaneMetadata& plane, StringPool& strings,
               ChromeTrace& out) {
  int64_t id = 0, timestamp_ns = 0;
  std::string_view name, display;
  std::vector<ProtoField> events;
  ProtoReader r(field);
  for (ProtoField f; r.next(f);) {
    if (f.number == 1) id = as_int(f.varint);
    if (f.number == 2) name = f.bytes;
    if (f.number == 3) timestamp_ns = as_int(f.varint);
    if (f.number == 4) events.push_back(f);
    if (f.number == 11) display = f.bytes;
  }
  if (timestamp_ns < -kMaxTraceTimeNs || timestamp_ns > kMaxTraceTimeNs) {
    out.skipped["XPlane lines with a time outside +-2^62 ns"] += events.size();
    return;
  }
  uint32_t lane = out.lane({pid, false}, {id, false});
  out.thread_names[lane] = std::string(display.empty() ? name : display);
  StatNames stats(plane, strings);
  for (const ProtoField& e : events) read_event(e, timestamp_ns, lane, plane, stats, out);
}

void read_plane(const ProtoField& field, int64_t pid, StringPool& strings, ChromeTrace& out) {
  PlaneMetadata metadata;
  std::string_view name;
  std::vector<ProtoField> lines;
  ProtoReader r(field);
  for (ProtoField f; r.next(f);) {
    if (f.number == 2) name = f.bytes;
    if (f.number == 3) lines.push_back(f);
    if (f.number == 4) read_event_metadata(f, strings, metadata);
    if (f.number == 5) read_stat_metadata(f, metadata);
  }
  if (lines.empty()) return;
  out.process_names[{pid, false}] = std::string(name);
  for (const ProtoField& line : lines) read_line(line, pid, metadata, strings, out);
}

// The name of an XSpace's first plane, read from its first bytes alone:
// field 1 (a plane) and its length, then the plane's id (field 1, a
// varint) if it has one, then its name (field 2). A damaged or cut file is
// still known by it, so that its import says where the damage is.
std::string_view first_plane_name(std::string_view bytes) {
  size_t at = 0;
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && at < bytes.size(); shift += 7) {
      uint8_t b = uint8_t(bytes[at++]);
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  uint64_t key = 0, length = 0, id = 0;
  if (!varint(key) || key != 0x0a || !varint(length)) return {};
  if (at < bytes.size() && uint8_t(bytes[at]) == 0x08 && (++at, !varint(id))) return {};
  if (!varint(key) || key != 0x12 || !varint(length) || length > bytes.size() - at) return {};
  return bytes.substr(at, size_t(length));
}

}  // namespace

bool is_xspace(std::string_view bytes) {
  auto xla = [](std::string_view name) { return name.starts_with("/host:") || name.starts_with("/device:"); };
  if (xla(first_plane_name(bytes))) return true;
  // Another plane may come first ("Task Environment"): the whole planes'.
  try {
    ProtoReader r(bytes);
    for (ProtoField f; r.next(f);) {
      if (f.number != 1 || f.wire != WireType::length) continue;
      ProtoReader plane(f);
      for (ProtoField p; plane.next(p);) {
        if (p.number == 2 && p.wire == WireType::length && xla(p.bytes)) return true;
      }
    }
  } catch (const ProtoError&) {
  }
  return false;
}

void read_xspace(std::string_view bytes, const std::string& path, StringPool& strings, ChromeTrace& out) {
  try {
    ProtoReader r(bytes);
    int64_t pid = 0;
    for (ProtoField f; r.next(f);) {
      if (f.number == 1 && f.wire == WireType::length) read_plane(f, ++pid, strings, out);
      if (f.number == 4 && f.wire == WireType::length && out.host_name.empty()) out.host_name = std::string(f.bytes);
    }
  } catch (const ProtoError& e) {
    throw ImportError(fmt::format("{}: {}", path, e.what()));
  }
  out.bytes = bytes.size();
}

void map_xspace(std::string_view bytes, const std::string& path, StringPool& strings, ImportedTrace& out) {
  ChromeTrace raw;
  read_xspace(bytes, path, strings, raw);
  map_jax(raw, strings, out);
  out.meta["source_format"] = "xplane";
  if (!raw.host_name.empty()) out.meta["hostname"] = raw.host_name;
}

}  // namespace loupe::prof::import
