// pprof memory profiles (JAX's jax.profiler.device_memory_profile(), a
// gzipped profile.proto) as memory events: docs/import.md, "pprof memory
// profiles".
//
// Such a profile is one moment: every buffer live on each device when it
// was taken, grouped by (stack, size, device) with a count, and each
// compiled program's device code. There is no allocation or free and no
// address, so each buffer becomes an allocation at the moment the profile
// was taken, numbered in place of an address, with its stack as call
// sites; the trace's meta says the devices' events are one moment.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/call_stacks.h"
#include "import/mappings.h"
#include "import/protobuf_reader.h"
#include "loupe/prof/python_frames.h"

namespace loupe::prof::import {

namespace {

constexpr int64_t kMaxBytes = int64_t(1) << 62;  // a size past it is damage, not memory
// Blocks made of all the samples' counts: a few bytes of a hostile profile
// may claim billions. Past this many, a sample is one block of its bytes.
constexpr int64_t kMaxBlocks = int64_t(1) << 24;

struct Line {
  uint64_t function = 0;
  int64_t line = 0;
};

struct Label {
  uint64_t key = 0, text = 0;  // string table indices
};

struct Sample {
  std::vector<uint64_t> locations;  // leaf first
  std::vector<uint64_t> values;     // as sample_type lists them (int64 as two's complement)
  std::vector<Label> labels;
};

struct Function {
  uint64_t name = 0, file = 0;  // string table indices
};

// profile.proto's fields that a memory profile needs.
struct Profile {
  std::vector<std::string_view> strings;
  std::vector<std::pair<uint64_t, uint64_t>> sample_types;  // (type, unit)
  std::vector<Sample> samples;
  std::unordered_map<uint64_t, std::vector<Line>> locations;  // by id; inlined first, the caller last
  std::unordered_map<uint64_t, Function> functions;           // by id
  int64_t time_nanos = 0;
};

[[noreturn]] void refuse(const std::string& what) { throw ImportError("pprof profile: " + what); }

// The kind of a device by its label: "TFRT_CPU_0", "cuda:1", "rocm:0".
DeviceKind device_kind_of(std::string_view name) {
  std::string lower;
  for (char c : name) lower += char(std::tolower(uint8_t(c)));
  auto has = [&](const char* part) { return lower.find(part) != std::string::npos; };
  if (has("cpu")) return DeviceKind::cpu;
  if (has("cuda") || has("gpu")) return DeviceKind::cuda;
  if (has("rocm")) return DeviceKind::rocm;
  return DeviceKind::other;
}

// Fields 1 and 2 of a message when they are varints, as ValueType
// (type, unit), Label (key, str) and Line (function_id, line) hold them.
std::pair<uint64_t, uint64_t> first_two_varints(const ProtoField& message) {
  std::pair<uint64_t, uint64_t> v{0, 0};
  ProtoReader r(message);
  for (ProtoField f; r.next(f);) {
    if (f.number == 1 && f.wire == WireType::varint) v.first = f.varint;
    if (f.number == 2 && f.wire == WireType::varint) v.second = f.varint;
  }
  return v;
}

// A location: its id and its lines.
std::pair<uint64_t, std::vector<Line>> read_location(const ProtoField& message) {
  std::pair<uint64_t, std::vector<Line>> loc;
  ProtoReader r(message);
  for (ProtoField f; r.next(f);) {
    if (f.number == 1 && f.wire == WireType::varint) loc.first = f.varint;
    if (f.number != 4 || f.wire != WireType::length) continue;
    auto [function, line] = first_two_varints(f);
    loc.second.push_back({.function = function, .line = int64_t(line)});
  }
  return loc;
}

std::pair<uint64_t, Function> read_function(const ProtoField& message) {
  uint64_t id = 0;
  Function fn;
  ProtoReader r(message);
  for (ProtoField f; r.next(f);) {
    if (f.wire != WireType::varint) continue;
    if (f.number == 1) id = f.varint;
    if (f.number == 2) fn.name = f.varint;
    if (f.number == 4) fn.file = f.varint;
  }
  return {id, fn};
}

Sample read_sample(const ProtoField& message) {
  Sample s;
  ProtoReader r(message);
  for (ProtoField f; r.next(f);) {
    if (f.number == 1) append_varints(f, s.locations);
    if (f.number == 2) append_varints(f, s.values);
    if (f.number != 3 || f.wire != WireType::length) continue;
    auto [key, text] = first_two_varints(f);
    s.labels.push_back({.key = key, .text = text});
  }
  return s;
}

// The string table and the sample types: all that says what a profile
// measures.
void read_header_field(const ProtoField& f, Profile& p) {
  if (f.number == 1 && f.wire == WireType::length) p.sample_types.push_back(first_two_varints(f));
  if (f.number == 6 && f.wire == WireType::length) p.strings.push_back(f.bytes);
}

Profile read_profile(std::string_view bytes) {
  Profile p;
  ProtoReader r(bytes);
  for (ProtoField f; r.next(f);) {
    read_header_field(f, p);
    bool nested = f.wire == WireType::length;
    if (f.number == 2 && nested) p.samples.push_back(read_sample(f));
    if (f.number == 4 && nested) p.locations.insert(read_location(f));
    if (f.number == 5 && nested) p.functions.insert(read_function(f));
    if (f.number == 9 && f.wire == WireType::varint) p.time_nanos = int64_t(f.varint);
  }
  if (p.strings.empty() || !p.strings[0].empty()) refuse("its string table does not begin with \"\"");
  return p;
}

class PprofMapper {
 public:
  PprofMapper(const Profile& p, StringPool& strings, ImportedTrace& out) : p_(p), strings_(strings), out_(out) {}

  void map() {
    find_value_columns();
    for (const Sample& s : p_.samples) {
      ++out_.source_events;
      map_sample(s);
    }
    std::string devices;
    for (const DeviceRow& d : out_.devices) devices += (devices.empty() ? "" : ",") + std::to_string(d.id);
    out_.meta[kMetaMemoryOneMoment] = devices;
    out_.meta["source_format"] = "pprof_memory_profile";
    out_.meta["clock"] = "pprof memory profile: one moment, when it was taken (time_nanos, ns since the Unix epoch)";
    out_.meta["memory_addresses"] = "none in a pprof profile: each block is numbered instead";
    if (as_one_block_ > 0) {
      out_.meta["pprof_samples_as_one_block"] =
          fmt::format("{} samples, their bytes not count blocks of one size or past 2^24 blocks in all", as_one_block_);
    }
    out_.wall_clock_known = p_.time_nanos > 0;
    out_.wall_ns_at_zero = p_.time_nanos;
  }

 private:
  const Profile& p_;
  StringPool& strings_;
  ImportedTrace& out_;
  size_t bytes_column_ = 0, count_column_ = SIZE_MAX;
  std::unordered_map<std::string_view, uint32_t> device_ids_;  // label -> trace id
  std::unordered_map<uint32_t, int64_t> allocated_;            // trace id -> running total
  CallStacks stacks_{strings_, out_.callsites};
  uint64_t next_address_ = 1;
  int64_t blocks_ = 0;         // made so far
  uint64_t as_one_block_ = 0;  // samples made one block of their bytes

  std::string_view str(uint64_t i) const {
    if (i >= p_.strings.size()) refuse(fmt::format("string index {} past its table of {}", i, p_.strings.size()));
    return p_.strings[size_t(i)];
  }

  // A memory profile's values: bytes, and a count of blocks beside them.
  void find_value_columns() {
    std::string types;
    bool found = false;
    for (size_t k = 0; k < p_.sample_types.size(); ++k) {
      auto [type, unit] = p_.sample_types[k];
      types += fmt::format("{}{}/{}", types.empty() ? "" : ", ", str(type), str(unit));
      if (str(unit) == "bytes" && !found) bytes_column_ = k, found = true;
      if (str(unit) == "count" && count_column_ == SIZE_MAX) count_column_ = k;
    }
    if (!found) refuse(fmt::format("not of memory: its values are {} (none in bytes)", types.empty() ? "none" : types));
  }

  std::string_view label(const Sample& s, std::string_view key) const {
    for (const Label& l : s.labels)
      if (str(l.key) == key) return str(l.text);
    return "";
  }

  void map_sample(const Sample& s) {
    if (s.values.size() <= bytes_column_) return skip("samples without a value in bytes");
    if (label(s, "kind") == "executable") return skip("compiled programs' device code (kind executable), not buffers");
    auto bytes = int64_t(s.values[bytes_column_]);
    int64_t count = count_column_ < s.values.size() ? int64_t(s.values[count_column_]) : 1;
    if (bytes < 0 || bytes > kMaxBytes) return skip("samples whose bytes are negative or past 2^62");
    if (count <= 0) return skip("samples whose count of blocks is not positive");
    // JAX groups the buffers of one size; a sample that is not such a
    // group, or past the blocks a trace of this is allowed, is one block.
    if (bytes % count != 0 || blocks_ + count > kMaxBlocks) {
      ++as_one_block_;
      count = 1;
    }
    blocks_ += count;
    uint32_t device = device_of(label(s, "device"));
    uint32_t site = stack_of(s);
    for (int64_t k = 0; k < count; ++k) {
      int64_t total = allocated_[device] += bytes / count;
      out_.memory.push_back({.device = device,
                             .time = 0,
                             .kind = MemoryEventKind::alloc,
                             .bytes = bytes / count,
                             .address = next_address_++,
                             .allocated = total,
                             .reserved = 0,
                             .callsite = site});
    }
  }

  void skip(const char* why) { ++out_.skipped[why]; }

  // A device label ("TFRT_CPU_0", "cuda:1") as a trace device: its number
  // the id, unless another label took it.
  uint32_t device_of(std::string_view name) {
    auto known = device_ids_.find(name);
    if (known != device_ids_.end()) return known->second;
    size_t digits = name.size();
    while (digits > 0 && std::isdigit(uint8_t(name[digits - 1])) && name.size() - digits < 6) --digits;
    uint32_t id = digits < name.size() ? uint32_t(std::stoul(std::string(name.substr(digits)))) : 0;
    auto taken = [&](uint32_t i) {
      for (const DeviceRow& d : out_.devices)
        if (d.id == i) return true;
      return false;
    };
    while (taken(id)) ++id;
    out_.devices.push_back(
        {.id = id, .name = std::string(name.empty() ? "unnamed device" : name), .kind = device_kind_of(name)});
    device_ids_.emplace(name, id);
    return id;
  }

  // The sample's stack (leaf first; a location's inlined functions before
  // the one they were inlined into) from the innermost frame of the user's
  // code outwards, as call sites; 0 when no frame is the user's.
  uint32_t stack_of(const Sample& s) {
    std::vector<PythonFrame> stack;
    for (uint64_t id : s.locations) {
      auto loc = p_.locations.find(id);
      if (loc == p_.locations.end()) refuse(fmt::format("a sample names location {}, which it does not list", id));
      for (const Line& l : loc->second) {
        auto fn = p_.functions.find(l.function);
        if (fn == p_.functions.end())
          refuse(fmt::format("location {} names function {}, which it does not list", id, l.function));
        PythonFrame f{.file = str(fn->second.file),
                      .line = uint32_t(std::clamp<int64_t>(l.line, 0, 0xffffffff)),
                      .function = str(fn->second.name)};
        CallStacks::keep(stack, f);
      }
    }
    return stacks_.site_of(stack);
  }
};

}  // namespace

bool is_protobuf(std::string_view head) {
  // Both protobufs loupe reads begin with field 1, a message: a pprof
  // profile's first sample_type, whose first field is a varint (0x08), or
  // an XSpace's first plane, whose first field is its id (0x08) or its
  // name (0x12). So: 0x0a, a length (a varint of up to five bytes), then
  // 0x08 or 0x12. JSON may begin with a newline (0x0a) too, but never has
  // those control characters after it.
  if (head.size() < 3 || uint8_t(head[0]) != 0x0a) return false;
  size_t at = 1;
  while (at < head.size() && at < 6 && (uint8_t(head[at]) & 0x80) != 0) ++at;
  if (at + 1 >= head.size() || (uint8_t(head[at]) & 0x80) != 0) return false;
  uint8_t key = uint8_t(head[at + 1]);
  return key == 0x08 || key == 0x12;
}

bool is_pprof_memory_profile(std::string_view bytes) {
  try {
    Profile p;  // the header only: the samples are read once, by the mapping
    ProtoReader r(bytes);
    for (ProtoField f; r.next(f);) read_header_field(f, p);
    for (auto [type, unit] : p.sample_types)
      if (unit < p.strings.size() && p.strings[size_t(unit)] == "bytes") return true;
  } catch (const std::exception&) {
  }
  return false;
}

void map_pprof_memory(std::string_view bytes, const std::string& path, StringPool& strings, ImportedTrace& out) {
  try {
    Profile p = read_profile(bytes);
    PprofMapper(p, strings, out).map();
  } catch (const ProtoError& e) {
    throw ImportError(fmt::format("{}: pprof profile: {}", path, e.what()));
  } catch (const ImportError& e) {
    throw ImportError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace loupe::prof::import
