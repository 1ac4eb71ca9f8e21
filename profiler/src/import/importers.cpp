#include "import/importers.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "import/byte_source.h"
#include "import/json_reader.h"
#include "import/mapped_file.h"
#include "import/mappings.h"

namespace loupe::prof::import {

namespace {

bool is_sqlite(const std::string& head) {
  return head.size() >= 16 && std::memcmp(head.data(), "SQLite format 3", 16) == 0;
}

// A pickle of protocol 2 or later begins with PROTO and its number.
bool is_pickle(const std::string& head) {
  return head.size() >= 2 && uint8_t(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5;
}

// The first bytes of what a file holds, from those stored (`head`):
// inflated, if it is compressed.
std::string content_head(const std::string& path, const std::string& head) {
  bool gzip = head.size() >= 2 && uint8_t(head[0]) == 0x1f && uint8_t(head[1]) == 0x8b;
  if (!gzip) return head;
  std::string inflated(head.size(), '\0');
  inflated.resize(open_byte_source(path)->read(inflated.data(), inflated.size()));
  return inflated;
}

Container container_of(const std::string& head) {
  if (is_sqlite(head)) return Container::sqlite;
  if (is_pickle(head)) return Container::pickle;
  if (is_protobuf(head)) return Container::protobuf;
  return Container::json;
}

// A JSON dialect's reader: the document, mapped.
template <void (*Map)(ChromeTrace&, StringPool&, ImportedTrace&)>
void read_json(ImportInput& input, ImportedTrace& out) {
  Map(input.json(), input.strings(), out);
}

// Detection asks in this order: the JSON dialects from the most particular
// to Chrome JSON, which takes any document.
constexpr Importer kImporters[] = {
    {.format = ImportFormat::kineto,
     .name = "kineto",
     .title = "PyTorch profiler (Kineto) JSON",
     .made_by = "`torch.profiler` / `export_chrome_trace`, plain or `.gz`",
     .recognised_by = "`schemaVersion` or `deviceProperties`, or Kineto categories (`cpu_op`, `cuda_runtime`, "
                      "`kernel`, ...)",
     .hint = "",
     .container = Container::json,
     .reads_any_of_its_container = true,
     .recognises = [](ImportInput& in) { return is_kineto_trace(in.json(), in.strings()); },
     .read = read_json<map_kineto>},
    {.format = ImportFormat::jax,
     .name = "jax",
     .title = "JAX profiler JSON",
     .made_by = "`jax.profiler` trace viewer or Perfetto JSON (`*.trace.json.gz`, `perfetto_trace.json.gz`)",
     .recognised_by = "processes named `/host:...` or `/device:...`",
     .hint = "",
     .container = Container::json,
     .reads_any_of_its_container = true,
     .recognises = [](ImportInput& in) { return is_jax_trace(in.json()); },
     .read = read_json<map_jax>},
    {.format = ImportFormat::chrome,
     .name = "chrome",
     .title = "Chrome trace-event JSON",
     .made_by = "any other tool's trace-event JSON",
     .recognised_by = "any other JSON with `traceEvents`, or a bare array of events",
     .hint = "",
     .container = Container::json,
     .reads_any_of_its_container = true,
     .recognises = [](ImportInput& in) { return (void)in.json(), true; },
     .read = read_json<map_chrome>},
    {.format = ImportFormat::nsys,
     .name = "nsys",
     .title = "Nsight Systems SQLite",
     .made_by = "`nsys export --type sqlite report.nsys-rep`",
     .recognised_by = "a SQLite file with `CUPTI_ACTIVITY_KIND_*`, `NVTX_EVENTS`, `TARGET_INFO_GPU` or "
                      "`CUDA_GPU_MEMORY_USAGE_EVENTS` tables",
     .hint = "export one with 'nsys export --type sqlite'",
     .container = Container::sqlite,
     .reads_any_of_its_container = false,
     .recognises = [](ImportInput& in) { return is_nsys_export(in.path()); },
     .read = [](ImportInput& in, ImportedTrace& out) { read_nsys(in.path(), in.strings(), out); }},
    {.format = ImportFormat::torch_memory,
     .name = "torch-memory",
     .title = "PyTorch memory snapshot",
     .made_by = "`torch.cuda.memory._dump_snapshot` (a pickle), plain or `.gz`; read as data, never run",
     .recognised_by = "a pickle (protocol 2 to 5) of a dict with `segments` and `device_traces`",
     .hint = "make one with torch.cuda.memory._dump_snapshot",
     .container = Container::pickle,
     .reads_any_of_its_container = false,
     .recognises = [](ImportInput& in) { return is_torch_snapshot(in.pickle()); },
     .read = [](ImportInput& in, ImportedTrace& out) { map_torch_snapshot(in.pickle(), in.strings(), out); }},
    {.format = ImportFormat::pprof_memory,
     .name = "pprof-memory",
     .title = "pprof memory profile",
     .made_by = "`jax.profiler.save_device_memory_profile` (or `device_memory_profile()`'s bytes), gzipped or not",
     .recognised_by = "a protobuf `profile.proto` whose sample types include one in `bytes`",
     .hint = "make one with jax.profiler.save_device_memory_profile",
     .container = Container::protobuf,
     .reads_any_of_its_container = true,  // asked for, a damaged one says where
     .recognises = [](ImportInput& in) { return is_pprof_memory_profile(in.whole()); },
     .read = [](ImportInput& in, ImportedTrace& out) { map_pprof_memory(in.whole(), in.path(), in.strings(), out); }},
    {.format = ImportFormat::xplane,
     .name = "xplane",
     .title = "XProf XPlane protobuf",
     .made_by = "`jax.profiler.trace` (`plugins/profile/<run>/<host>.xplane.pb`, what XProf reads)",
     .recognised_by = "a protobuf `XSpace` with a `/host:` or `/device:` plane",
     .hint = "jax.profiler writes one per host beside the trace viewer JSON",
     .container = Container::protobuf,
     .reads_any_of_its_container = false,
     .recognises = [](ImportInput& in) { return is_xspace(in.whole()); },
     .read = [](ImportInput& in, ImportedTrace& out) { map_xspace(in.whole(), in.path(), in.strings(), out); }},
};

// Everything a source yields, for a format read whole.
std::string read_all(ByteSource& source) {
  std::string bytes;
  bytes.resize(std::max<uint64_t>(source.size_hint() + 1, 1 << 16));  // + 1: the end shows without a resize
  size_t used = 0;
  while (size_t n = source.read(bytes.data() + used, bytes.size() - used)) {
    used += n;
    if (used == bytes.size()) bytes.resize(bytes.size() * 2);
  }
  bytes.resize(used);
  return bytes;
}

// Markdown without its code marks, for a message on a terminal.
std::string plain(std::string_view markdown) {
  std::string out;
  for (char c : markdown) {
    if (c != '`') out += c;
  }
  return out;
}

// No importer recognises the input: what it is, and what each format of
// its container needs.
[[noreturn]] void refuse_unrecognised(const ImportInput& input) {
  std::string needs;
  for (const Importer& i : kImporters) {
    if (i.container != input.container()) continue;
    needs += fmt::format("{}{}: {}", needs.empty() ? "" : "; ", i.title, plain(i.recognised_by));
  }
  throw ImportError(
      fmt::format("{}: a {} file, but none loupe imports ({})", input.path(), name_of(input.container()), needs));
}

// The file's bytes contradict the format asked for.
[[noreturn]] void refuse_forced(const ImportInput& input, const Importer& i) {
  throw ImportError(fmt::format("{}: --format {} reads {} files, and this is not a {} file{}{}", input.path(), i.name,
                                i.title, name_of(i.container), i.hint.empty() ? "" : "; ", i.hint));
}

}  // namespace

std::string_view name_of(Container c) {
  switch (c) {
    case Container::json: return "JSON";
    case Container::sqlite: return "SQLite";
    case Container::pickle: return "pickle";
    case Container::protobuf: return "protobuf";
  }
  return "?";
}

ImportInput::ImportInput(std::string path, unsigned threads) : path_(std::move(path)), threads_(threads) {
  std::string head = read_file_head(path_, 100);
  if (head.empty()) throw ImportError(fmt::format("{}: the file is empty", path_));
  std::string content = content_head(path_, head);
  container_ = container_of(content);
  if (container_ == Container::json) {
    size_t first = content.find_first_not_of(" \t\r\n");
    plausible_ = first == std::string::npos || content[first] == '{' || content[first] == '[';
  }
}

ChromeTrace& ImportInput::json() {
  if (json_) return *json_;
  auto t0 = std::chrono::steady_clock::now();
  ChromeTrace trace;
  auto source = open_byte_source(path_, threads_ != 1);
  read_chrome_json(*source, path_, strings_, trace, threads_);
  json_ = std::move(trace);
  parse_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return *json_;
}

const PickleDoc& ImportInput::pickle() {
  if (pickle_) return *pickle_;
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<ByteSource> source = open_byte_source(path_);
  // A plain file is read through a mapping whose pages go as the reading
  // passes them: a snapshot of 1 GB need not be resident whole beside
  // what is made of it. A compressed one is inflated into memory.
  std::optional<MappedFile> mapped = source->compressed() ? std::nullopt : MappedFile::open(path_);
  std::string inflated = mapped ? std::string() : read_all(*source);
  std::string_view bytes = mapped ? mapped->bytes() : std::string_view(inflated);
  try {
    pickle_ = PickleDoc::read(bytes, [&](size_t offset) {
      if (mapped) mapped->release_before(offset);
    });
  } catch (const PickleError& e) {
    throw ImportError(fmt::format("{}: {}", path_, e.what()));
  }
  pickle_bytes_ = bytes.size();
  parse_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return *pickle_;
}

std::string_view ImportInput::whole() {
  if (!whole_) {
    auto t0 = std::chrono::steady_clock::now();
    whole_ = read_all(*open_byte_source(path_));
    parse_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return *whole_;
}

void ImportInput::release_document() {
  if (json_) {
    bytes_read_ = json_->bytes;
    json_.reset();
  }
  if (pickle_) {
    bytes_read_ = pickle_bytes_;
    pickle_.reset();
  }
  if (whole_) {
    bytes_read_ = whole_->size();
    whole_.reset();
  }
}

uint64_t ImportInput::bytes() const {
  if (bytes_read_ != 0) return bytes_read_;
  if (json_) return json_->bytes;
  if (pickle_) return pickle_bytes_;
  if (whole_) return whole_->size();
  struct stat st {};
  return ::stat(path_.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

std::span<const Importer> importers() { return kImporters; }

const Importer& choose_importer(ImportInput& input, ImportFormat format) {
  for (const Importer& i : kImporters) {
    if (format == ImportFormat::auto_detect) {
      if (i.container == input.container() && i.recognises(input)) return i;
      continue;
    }
    if (i.format != format) continue;
    if (i.container != input.container()) refuse_forced(input, i);
    if (!i.reads_any_of_its_container && !i.recognises(input)) refuse_unrecognised(input);
    return i;
  }
  refuse_unrecognised(input);
}

}  // namespace loupe::prof::import
