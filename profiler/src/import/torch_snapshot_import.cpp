// PyTorch memory snapshots (torch.cuda.memory._dump_snapshot, or
// torch.cuda._memory_viz._profile_to_snapshot of a profile) as memory
// events: docs/import.md, "PyTorch memory snapshots".
//
// A snapshot holds the caching allocator's recent history per device
// (`device_traces`, a ring: its oldest entries may be gone) and its state
// when the snapshot was taken (`segments`, each with its blocks). The
// entries carry sizes but no running totals, so the totals are rebuilt:
// what the segments hold at the end, less what the entries changed, is
// what was held before the first entry.
#include <fmt/format.h>

#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/call_stacks.h"
#include "import/mappings.h"
#include "loupe/prof/python_frames.h"

namespace loupe::prof::import {

namespace {

constexpr int64_t kMaxBytes = int64_t(1) << 62;  // a size past it is damage, not memory

// What an allocator entry does to the device's totals.
struct Change {
  int64_t allocated = 0, reserved = 0;
};

class SnapshotMapper {
 public:
  SnapshotMapper(const PickleDoc& doc, StringPool& strings, ImportedTrace& out)
      : doc_(doc), strings_(strings), out_(out) {}

  void map() {
    PyRef traces = field(doc_.root(), "device_traces", PyKind::list, "the snapshot");
    from_profile_ = made_from_profile(traces);
    host_device_ = from_profile_ && doc_.size(traces) > 0 ? doc_.size(traces) - 1 : SIZE_MAX;
    if (from_profile_) {
      out_.meta["snapshot_made_from"] =
          "a profile (_profile_to_snapshot): the last device is the host, and the segments span the blocks' "
          "addresses instead of reserving memory, so reserved memory is not known";
    }
    for (size_t d = 0; d < doc_.size(traces) && d <= 0xffff; ++d) {
      std::vector<Change> changes;
      size_t first = out_.memory.size();
      read_device(uint32_t(d), doc_.item(traces, d), changes);
      Change held = held_at_end(uint32_t(d));
      if (out_.memory.size() > first || held.reserved > 0) add_device(uint32_t(d));
      set_totals(uint32_t(d), held, first, changes);
    }
    out_.meta["source_format"] = "torch_memory_snapshot";
    out_.meta["clock"] = any_time_ ? "torch memory snapshot: time_us, us since the Unix epoch"
                                   : "torch memory snapshot: no times recorded; entries 1 ns apart in their order";
    out_.wall_clock_known = any_time_;
    if (!any_time_) out_.meta[kMetaTimesAreOrder] = "1";
    if (earlier_than_before_ > 0) out_.meta["snapshot_entries_moved_forward"] = std::to_string(earlier_than_before_);
  }

 private:
  const PickleDoc& doc_;
  StringPool& strings_;
  ImportedTrace& out_;
  std::unordered_map<uint32_t, uint32_t> site_of_frames_;  // a frames list (shared through the memo) -> call site
  CallStacks stacks_{strings_, out_.callsites};
  bool any_time_ = false;
  uint64_t earlier_than_before_ = 0;
  bool from_profile_ = false;      // made by torch.cuda._memory_viz._profile_to_snapshot
  size_t host_device_ = SIZE_MAX;  // the device index of host memory in such a snapshot

  [[noreturn]] void refuse(const std::string& where, const std::string& what) const {
    throw ImportError(fmt::format("PyTorch memory snapshot: {}: {}", where, what));
  }

  PyRef field(PyRef dict, std::string_view key, PyKind kind, const std::string& where) const {
    std::optional<PyRef> v = doc_.find(dict, key);
    if (!v) refuse(where, fmt::format("no '{}'", key));
    if (doc_.kind(*v) != kind) refuse(where, fmt::format("'{}' is of the wrong type", key));
    return *v;
  }

  // An integer field, or nullopt when absent, not an integer or out of range.
  std::optional<int64_t> integer(PyRef dict, std::string_view key, int64_t lo, int64_t hi) const {
    std::optional<PyRef> v = doc_.find(dict, key);
    if (!v || doc_.kind(*v) != PyKind::integer) return std::nullopt;
    int64_t n = doc_.integer(*v);
    if (n < lo || n > hi) return std::nullopt;
    return n;
  }

  void read_device(uint32_t device, PyRef entries, std::vector<Change>& changes) {
    std::string where = fmt::format("device_traces[{}]", device);
    if (doc_.kind(entries) != PyKind::list) refuse(where, "not a list");
    int64_t last_time = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < doc_.size(entries); ++i) {
      PyRef e = doc_.item(entries, i);
      if (doc_.kind(e) != PyKind::dict) refuse(fmt::format("{}[{}]", where, i), "not a dict");
      ++out_.source_events;
      read_entry(device, e, int64_t(i), last_time, changes);
    }
  }

  void read_entry(uint32_t device, PyRef e, int64_t index, int64_t& last_time, std::vector<Change>& changes) {
    std::optional<PyRef> action = doc_.find(e, "action");
    if (!action || doc_.kind(*action) != PyKind::text) return skip("entries without an action");
    std::string_view what = doc_.text(*action);
    std::optional<MemoryEventKind> kind = kind_of(what);
    if (!kind) return skip_action(what);
    std::optional<int64_t> bytes = integer(e, "size", 0, kMaxBytes);
    if (!bytes) return skip("entries whose size is missing, negative or past 2^62 bytes");
    std::optional<int64_t> time = time_of(e, index, last_time);
    if (!time) return skip(kTimeOutOfRange);
    MemoryEventRow row{.device = device,
                       .time = *time,
                       .kind = *kind,
                       .bytes = *bytes,
                       .address = uint64_t(integer(e, "addr", 0, std::numeric_limits<int64_t>::max()).value_or(0)),
                       .callsite = callsite_of(e)};
    out_.memory.push_back(row);
    changes.push_back(change_of(*kind, *bytes));
  }

  // free_requested is when the program let go; the block counts as
  // allocated until free_completed (a stream still using it delays that).
  static std::optional<MemoryEventKind> kind_of(std::string_view action) {
    if (action == "alloc") return MemoryEventKind::alloc;
    if (action == "free_completed") return MemoryEventKind::free;
    if (action == "segment_alloc" || action == "segment_map") return MemoryEventKind::reserve;
    if (action == "segment_free" || action == "segment_unmap") return MemoryEventKind::release;
    if (action == "oom") return MemoryEventKind::oom;
    return std::nullopt;
  }

  static Change change_of(MemoryEventKind kind, int64_t bytes) {
    switch (kind) {
      case MemoryEventKind::alloc: return {.allocated = bytes};
      case MemoryEventKind::free: return {.allocated = -bytes};
      case MemoryEventKind::reserve: return {.reserved = bytes};
      case MemoryEventKind::release: return {.reserved = -bytes};
      case MemoryEventKind::retry:
      case MemoryEventKind::oom: return {};
    }
    return {};
  }

  void skip(const char* why) { ++out_.skipped[why]; }

  void skip_action(std::string_view action) {
    if (action == "free_requested") return skip("free_requested entries (the block is freed at its free_completed)");
    if (action == "snapshot") return skip("snapshot markers");
    skip("entries of other actions (user_defined, ...)");
  }

  // time_us, in ns; without one, the entry's place in its list. A time
  // earlier than the entry before it is moved up to that one's, so that the
  // totals, rebuilt in the entries' order, hold at every time.
  std::optional<int64_t> time_of(PyRef e, int64_t index, int64_t& last_time) {
    constexpr int64_t kMaxUs = (int64_t(1) << 62) / 1000;
    std::optional<PyRef> us = doc_.find(e, "time_us");
    int64_t t = index;
    if (us && doc_.kind(*us) == PyKind::integer) {
      int64_t v = doc_.integer(*us);
      if (v < -kMaxUs || v > kMaxUs) return std::nullopt;
      t = v * 1000;
      any_time_ = true;
    }
    if (t < last_time) {
      ++earlier_than_before_;
      t = last_time;
    }
    last_time = t;
    return t;
  }

  // The innermost frame of the user's code and the frames that called it
  // (frames are listed innermost first), as a stack of call sites; 0 when
  // no frame is the user's.
  uint32_t callsite_of(PyRef e) {
    std::optional<PyRef> frames = doc_.find(e, "frames");
    if (!frames || doc_.kind(*frames) != PyKind::list) return 0;
    auto cached = site_of_frames_.find(frames->node);
    if (cached != site_of_frames_.end()) return cached->second;
    std::vector<PythonFrame> stack;
    for (size_t i = 0; i < doc_.size(*frames) && stack.size() < CallStacks::kMaxFrames; ++i) {
      if (std::optional<PythonFrame> f = frame_of(doc_.item(*frames, i))) CallStacks::keep(stack, *f);
    }
    uint32_t site = stacks_.site_of(stack);
    site_of_frames_.emplace(frames->node, site);
    return site;
  }

  // A frame is {filename, line, name}; a profile's frames carry the file
  // and line in the name ("train.py(12): step") and "none" as the file.
  // Nothing for a frame that names no Python line (a built-in's).
  std::optional<PythonFrame> frame_of(PyRef frame) {
    if (doc_.kind(frame) != PyKind::dict) return std::nullopt;
    std::optional<PyRef> file = doc_.find(frame, "filename"), name = doc_.find(frame, "name");
    std::string_view f = file && doc_.kind(*file) == PyKind::text ? doc_.text(*file) : "";
    std::string_view n = name && doc_.kind(*name) == PyKind::text ? doc_.text(*name) : "";
    PythonFrame where{.file = f, .line = uint32_t(integer(frame, "line", 0, 0xffffffff).value_or(0)), .function = n};
    if (f.empty() || f == "none" || f == "??") return parse_python_frame(n);
    return where;
  }

  // What the segments of `device` held when the snapshot was taken:
  // reserved, their sizes; allocated, their blocks in use (a block whose
  // free was requested but has not completed still counts).
  Change held_at_end(uint32_t device) const {
    Change held;
    std::optional<PyRef> segments = doc_.find(doc_.root(), "segments");
    if (!segments || doc_.kind(*segments) != PyKind::list) return held;
    for (size_t i = 0; i < doc_.size(*segments); ++i) {
      PyRef s = doc_.item(*segments, i);
      if (doc_.kind(s) != PyKind::dict || integer(s, "device", 0, 0xffff).value_or(-1) != device) continue;
      if (!from_profile_) held.reserved += integer(s, "total_size", 0, kMaxBytes).value_or(0);
      held.allocated += blocks_in_use(s);
    }
    return held;
  }

  int64_t blocks_in_use(PyRef segment) const {
    std::optional<PyRef> blocks = doc_.find(segment, "blocks");
    if (!blocks || doc_.kind(*blocks) != PyKind::list) return 0;
    int64_t used = 0;
    for (size_t i = 0; i < doc_.size(*blocks); ++i) {
      PyRef b = doc_.item(*blocks, i);
      std::optional<PyRef> state = doc_.find(b, "state");
      if (!state || doc_.kind(*state) != PyKind::text) continue;
      std::string_view s = doc_.text(*state);
      if (s == "active_allocated" || s == "active_pending_free") used += integer(b, "size", 0, kMaxBytes).value_or(0);
    }
    return used;
  }

  void add_device(uint32_t device) {
    if (device == host_device_) {
      out_.devices.push_back({.id = device, .name = "cpu", .kind = DeviceKind::cpu});
      return;
    }
    out_.devices.push_back({.id = device, .name = fmt::format("cuda:{}", device), .kind = DeviceKind::cuda});
  }

  // _profile_to_snapshot writes each frame as {"filename": "none", "line": 0,
  // "name": "file.py(12): fn"} (the profiler's own naming), lists the CUDA
  // devices first and the host last, and makes one segment per device from
  // the lowest address to the highest; the caching allocator's own
  // snapshots name the file. The first frame of the first stack tells.
  bool made_from_profile(PyRef traces) const {
    for (size_t d = 0; d < doc_.size(traces); ++d) {
      PyRef entries = doc_.item(traces, d);
      if (doc_.kind(entries) != PyKind::list) return false;
      for (size_t i = 0; i < doc_.size(entries); ++i) {
        PyRef e = doc_.item(entries, i);
        std::optional<PyRef> frames = doc_.kind(e) == PyKind::dict ? doc_.find(e, "frames") : std::nullopt;
        if (!frames || doc_.kind(*frames) != PyKind::list || doc_.size(*frames) == 0) continue;
        PyRef frame = doc_.item(*frames, 0);
        std::optional<PyRef> file = doc_.kind(frame) == PyKind::dict ? doc_.find(frame, "filename") : std::nullopt;
        return file && doc_.kind(*file) == PyKind::text && doc_.text(*file) == "none";
      }
    }
    return false;
  }

  // The running totals after each entry, from what was held before the
  // first: the end state (`held`) less every change the entries made. A ring that
  // lost entries still adds up, as the lost ones are in the "before".
  void set_totals(uint32_t device, Change held, size_t first, const std::vector<Change>& changes) {
    Change before = held;
    for (const Change& c : changes) {
      before.allocated -= c.allocated;
      before.reserved -= c.reserved;
    }
    if (before.allocated < 0 || before.reserved < 0) {
      out_.meta[fmt::format("snapshot_totals_device_{}", device)] =
          "the entries free more than the segments account for; totals start from 0";
      before = {};
    }
    for (size_t i = 0; i < changes.size(); ++i) {
      before.allocated += changes[i].allocated;
      before.reserved += changes[i].reserved;
      out_.memory[first + i].allocated = before.allocated;
      out_.memory[first + i].reserved = before.reserved;
    }
  }
};

}  // namespace

bool is_torch_snapshot(const PickleDoc& doc) {
  return doc.kind(doc.root()) == PyKind::dict && doc.find(doc.root(), "segments") &&
         doc.find(doc.root(), "device_traces");
}

void map_torch_snapshot(const PickleDoc& doc, StringPool& strings, ImportedTrace& out) {
  SnapshotMapper(doc, strings, out).map();
}

}  // namespace loupe::prof::import

namespace loupe::prof {

SnapshotHistory read_torch_snapshot_history(std::string_view pickle) {
  auto read = [&] {
    try {
      return import::PickleDoc::read(pickle);
    } catch (const import::PickleError& e) {
      throw ImportError(fmt::format("PyTorch memory snapshot: {}", e.what()));
    }
  };
  const import::PickleDoc doc = read();
  if (!import::is_torch_snapshot(doc))
    throw ImportError("PyTorch memory snapshot: not a dict with 'segments' and 'device_traces'");
  import::StringPool strings;
  import::ImportedTrace mapped;
  import::map_torch_snapshot(doc, strings, mapped);
  SnapshotHistory out;
  for (const CallSiteRow& c : mapped.callsites) {
    out.callsites.push_back({.file = std::string(strings.text(c.file)),
                             .function = std::string(strings.text(c.function)),
                             .line = c.line,
                             .parent = c.parent});
  }
  out.events = std::move(mapped.memory);
  out.times_known = mapped.wall_clock_known;
  for (const DeviceRow& d : mapped.devices) out.devices.push_back(d.id);
  return out;
}

}  // namespace loupe::prof
