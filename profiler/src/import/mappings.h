// The format mappings: each turns what its reader produced into loupe rows
// (ImportedTrace). One file per format; docs/import.md has the tables.
#pragma once

#include <string>
#include <string_view>

#include "import/chrome_events.h"
#include "import/imported_trace.h"
#include "import/pickle_reader.h"
#include "import/string_pool.h"
#include "loupe/prof/import.h"

namespace loupe::prof::import {

// Which Chrome-JSON dialect a parsed trace is: Kineto's (schemaVersion,
// deviceProperties or PyTorch profiler categories), JAX's (XLA's /host: and
// /device: processes); plain Chrome JSON otherwise.
bool is_kineto_trace(const ChromeTrace& raw, const StringPool& strings);
bool is_jax_trace(const ChromeTrace& raw);

void map_kineto(ChromeTrace& raw, StringPool& strings, ImportedTrace& out);
void map_jax(ChromeTrace& raw, StringPool& strings, ImportedTrace& out);
void map_chrome(ChromeTrace& raw, StringPool& strings, ImportedTrace& out);

// Whether `path` (a SQLite file) holds Nsight Systems export tables.
bool is_nsys_export(const std::string& path);
// Reads an Nsight Systems SQLite export. Throws ImportError naming the
// table for a damaged or foreign file.
void read_nsys(const std::string& path, StringPool& strings, ImportedTrace& out);

// Whether a pickle is a PyTorch memory snapshot: a dict with `segments`
// and `device_traces` (torch.cuda.memory._snapshot()).
bool is_torch_snapshot(const PickleDoc& doc);
// Its allocator events as memory events, each allocation's innermost frame
// of the user's code as its call site. Throws ImportError naming the entry
// for a snapshot of the wrong shape.
void map_torch_snapshot(const PickleDoc& doc, StringPool& strings, ImportedTrace& out);

// Whether a file's first bytes (inflated) look like a protobuf message as
// a pprof profile begins; whether the whole of one is a pprof profile with
// values in bytes (a memory profile).
bool is_protobuf(std::string_view head);
bool is_pprof_memory_profile(std::string_view bytes);
// Its buffers as allocations at the moment it was taken, each with its
// stack from the innermost frame of the user's code. Throws ImportError
// naming the byte or the field for a damaged or foreign profile.
void map_pprof_memory(std::string_view bytes, const std::string& path, StringPool& strings, ImportedTrace& out);

// Whether a protobuf is an XProf XSpace with a /host: or /device: plane
// (`<host>.xplane.pb`). Its events as the Chrome events of JAX's
// trace-viewer JSON, mapped as that JSON is (map_jax). Throws ImportError
// naming the byte for a damaged file.
bool is_xspace(std::string_view bytes);
void read_xspace(std::string_view bytes, const std::string& path, StringPool& strings, ChromeTrace& out);
void map_xspace(std::string_view bytes, const std::string& path, StringPool& strings, ImportedTrace& out);

}  // namespace loupe::prof::import
