// Importing traces recorded by other profilers into loupe trace files:
// PyTorch's profiler (Kineto JSON), JAX's profiler (Chrome/Perfetto JSON
// from jax.profiler), any Chrome trace-event JSON, and Nsight Systems'
// SQLite export, PyTorch memory snapshots and pprof memory profiles.
// docs/import.md describes each mapping.
//
// Input files are untrusted: a file that is not a trace, or a damaged one,
// raises ImportError with one line naming the file and where it went wrong
// (the byte offset in the JSON, or the SQLite table). Event kinds loupe has
// no table for are counted as skipped, never a failure.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "loupe/prof/trace_model.h"
#include "loupe/prof/trace_rows.h"

namespace loupe::prof {

class ImportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ImportFormat : uint8_t {
  auto_detect = 0,   // decided from the content
  kineto = 1,        // PyTorch profiler (Kineto) JSON
  chrome = 2,        // any Chrome trace-event JSON
  jax = 3,           // JAX / XLA profiler trace JSON (trace viewer, Perfetto)
  nsys = 4,          // Nsight Systems SQLite export
  torch_memory = 5,  // PyTorch memory snapshot (a pickle)
  pprof_memory = 6,  // pprof memory profile (protobuf): JAX's device_memory_profile()
  xplane = 7,        // XProf XSpace (protobuf): jax.profiler's <host>.xplane.pb
};

// The formats by name, as `loupe import --format` takes them: "auto", then
// each importer's ("kineto", "jax", "chrome", "nsys"), in the order
// detection asks them (the importers' table, import/importers.cpp).
std::vector<std::string_view> import_format_choices();
std::string_view import_format_name(ImportFormat format);
// What a format's files are made of: "JSON", "SQLite".
std::string_view import_format_container(ImportFormat format);
// Parses a name as above; throws ImportError for anything else.
ImportFormat parse_import_format(std::string_view name);
// The names after the `first`, "a, b, c or d": for messages and help.
std::string import_format_names(size_t first = 0);
// "PyTorch profiler (Kineto) JSON, ... or Nsight Systems SQLite": for help.
std::string import_format_titles();
// docs/import.md's table of the formats, as the importers' table gives it.
std::string import_formats_markdown();

struct ImportOptions {
  ImportFormat format = ImportFormat::auto_detect;
  // Threads parsing JSON besides the reading one: 0 = one per core (at
  // most 4), 1 = parse on the reading thread only. The trace written is
  // the same either way.
  unsigned threads = 0;
};

struct ImportResult {
  ImportFormat format = ImportFormat::auto_detect;  // the format actually read
  uint64_t input_bytes = 0;                         // bytes parsed: uncompressed JSON, or the SQLite file
  uint64_t source_events = 0;                       // events (or rows) read from the input
  uint64_t rows_written = 0;                        // event rows in the loupe trace
  uint64_t skipped = 0;                             // source events not imported (also meta skipped_events)
  std::map<std::string, uint64_t> skipped_by_kind;  // why, and how many
  std::map<std::string, uint64_t> rows_by_table;    // loupe table -> rows
  // Where the time went: reading and parsing, mapping to loupe rows, and
  // writing the file (seconds).
  double read_seconds = 0, map_seconds = 0, write_seconds = 0;
  // The rank of a distributed job the trace says it is (Kineto's
  // distributedInfo), and the job's size: -1 when it does not say. Also
  // the meta rows rank and world_size.
  int64_t rank = -1, world_size = -1;
  std::string backend;  // the job's distributed backend (nccl, gloo), "" when unknown
  std::string host;     // the host it was recorded on, "" when unknown
};

// Reads `in` and writes the loupe trace `out` (replacing it). Throws
// ImportError for a bad input and StoreError if `out` cannot be written;
// no partial output file is left behind on failure.
ImportResult import_trace(const std::string& in, const std::string& out, const ImportOptions& options = {});

// Reads `in` into a model in memory: the model load_trace() reads back
// from the file import_trace() writes (the same rows, strings and meta,
// TraceModel::path the input's), without writing one. Fills `result`, if
// given, as import_trace() returns it (write_seconds: building the model).
// Throws ImportError for a bad input.
TraceModel import_model(const std::string& in, const ImportOptions& options = {}, ImportResult* result = nullptr);

// The rank, job size, backend and host a trace's meta rows give (rank,
// world_size, distributed_backend, hostname), into `result`'s fields.
void take_distributed_meta(const std::map<std::string, std::string>& meta, ImportResult& result);

// A PyTorch memory snapshot's allocator history, from the pickle's bytes
// (torch.cuda.memory._snapshot() pickled), mapped as `loupe import` maps a
// snapshot file (docs/import.md): for a live capture, which adds what the
// CUDA caching allocator recorded to its own events. Throws ImportError
// naming the entry for a pickle that is not a snapshot.
struct SnapshotFrame {
  std::string file, function;
  uint32_t line = 0;
  uint32_t parent = 0;  // the calling frame: an earlier frame's index + 1; 0 for none
};
struct SnapshotHistory {
  std::vector<SnapshotFrame> callsites;  // call site k + 1 is callsites[k]
  std::vector<MemoryEventRow> events;    // in order per device; callsite: an index + 1 above
  // Whether the entries carry times: the events' times are then ns since
  // the Unix epoch; otherwise each entry's place in its device's list.
  bool times_known = false;
  std::vector<uint32_t> devices;  // the devices the events are on
};
SnapshotHistory read_torch_snapshot_history(std::string_view pickle);

// Whether the first bytes of `path` could begin a file loupe imports (a
// SQLite, pickle or protobuf header; JSON's `{` or `[`, gzipped or not): a
// cheap test before reading a whole file for another purpose (hashing it
// for the cache). Throws ImportError for a missing or empty file.
bool looks_importable(const std::string& path);

// The format of `path` from its first bytes and, for JSON, its content:
// ImportFormat::kineto, chrome, jax or nsys. Throws ImportError.
ImportFormat detect_import_format(const std::string& path);

}  // namespace loupe::prof
