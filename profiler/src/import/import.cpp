#include "loupe/prof/import.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <iterator>

#include "import/importers.h"
#include "loupe/prof/model_builder.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof {

std::string_view import_format_name(ImportFormat format) {
  if (format == ImportFormat::auto_detect) return "auto";
  for (const import::Importer& i : import::importers()) {
    if (i.format == format) return i.name;
  }
  return "?";
}

std::string_view import_format_container(ImportFormat format) {
  for (const import::Importer& i : import::importers()) {
    if (i.format == format) return name_of(i.container);
  }
  return "?";
}

std::vector<std::string_view> import_format_choices() {
  std::vector<std::string_view> names{"auto"};
  for (const import::Importer& i : import::importers()) names.push_back(i.name);
  return names;
}

ImportFormat parse_import_format(std::string_view name) {
  if (name == "auto") return ImportFormat::auto_detect;
  for (const import::Importer& i : import::importers()) {
    if (name == i.name) return i.format;
  }
  throw ImportError(fmt::format("unknown import format '{}' (expected {})", name, import_format_names()));
}

std::string import_format_names(size_t first) {
  std::vector<std::string_view> all = import_format_choices();
  std::string names;
  for (size_t i = first; i < all.size(); ++i) {
    names += fmt::format("{}{}", i == first ? "" : i + 1 == all.size() ? " or " : ", ", all[i]);
  }
  return names;
}

std::string import_format_titles() {
  std::string titles;
  auto all = import::importers();
  for (size_t i = 0; i < all.size(); ++i) {
    titles += fmt::format("{}{}", i == 0 ? "" : i + 1 == all.size() ? " or " : ", ", all[i].title);
  }
  return titles;
}

std::string import_formats_markdown() {
  std::string out = "| format | `--format` | what | how it is recognised (`auto`, the default) |\n|---|---|---|---|\n";
  for (const import::Importer& i : import::importers()) {
    out += fmt::format("| {} | `{}` | {} | {} |\n", i.title, i.name, i.made_by, i.recognised_by);
  }
  return out;
}

void take_distributed_meta(const std::map<std::string, std::string>& meta, ImportResult& result) {
  auto number = [&](const char* key) -> int64_t {
    auto it = meta.find(key);
    if (it == meta.end()) return -1;
    int64_t n = -1;
    const std::string& text = it->second;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size() || n < 0) {
      throw ImportError(fmt::format("meta '{}' is '{}', not a rank number", key, text));
    }
    return n;
  };
  result.rank = number("rank");
  result.world_size = number("world_size");
  if (auto it = meta.find("hostname"); it != meta.end()) result.host = it->second;
  if (auto it = meta.find("distributed_backend"); it != meta.end()) result.backend = it->second;
}

bool looks_importable(const std::string& path) { return import::ImportInput(path, 0).plausible(); }

ImportFormat detect_import_format(const std::string& path) {
  import::ImportInput input(path, 0);
  return import::choose_importer(input, ImportFormat::auto_detect).format;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

WriterOptions import_writer_options(const std::string& in) {
  return {.producer = "loupe import", .live = false, .inputs = {in}};
}

// Reads the input into `trace` with `importer`, and fills the result's
// figures of the reading.
void read_import(import::ImportInput& input, const import::Importer& importer, import::ImportedTrace& trace,
                 ImportResult& result) {
  double parsed_before = input.parse_seconds();
  auto t1 = Clock::now();
  importer.read(input, trace);
  result.read_seconds = input.parse_seconds();
  result.map_seconds = seconds_since(t1) - (input.parse_seconds() - parsed_before);
  result.format = importer.format;
  result.input_bytes = input.bytes();
  input.release_document();
  trace.meta["source_file"] = input.path();
  trace.meta["producer"] = fmt::format("loupe import ({})", import_format_name(result.format));
  result.source_events = trace.source_events;
  take_distributed_meta(trace.meta, result);
}

// The result's figures of what was kept and left out.
void take_summary(const import::ImportedTrace& trace, const import::WriteSummary& s, ImportResult& result) {
  result.skipped_by_kind = trace.skipped;  // with what writing left out
  result.rows_written = s.rows;
  result.skipped = s.skipped;
  result.rows_by_table = s.rows_by_table;
  for (auto it = result.skipped_by_kind.begin(); it != result.skipped_by_kind.end();) {
    it = it->second == 0 ? result.skipped_by_kind.erase(it) : std::next(it);
  }
}

}  // namespace

ImportResult import_trace(const std::string& in, const std::string& out, const ImportOptions& options) {
  import::ImportInput input(in, options.threads);
  // Written beside the output and moved into place by close(): a failed
  // import leaves the output as it was, and never a half-written file.
  ImportResult result;
  const import::Importer& importer = import::choose_importer(input, options.format);
  TraceWriter writer(out, import_writer_options(in));
  import::ImportedTrace trace;
  read_import(input, importer, trace, result);
  auto t2 = Clock::now();
  import::WriteSummary s;
  try {
    s = import::write_imported(trace, input.strings(), writer);
  } catch (const ImportError& e) {
    throw ImportError(fmt::format("{}: {}", in, e.what()));
  }
  result.write_seconds = seconds_since(t2);
  take_summary(trace, s, result);
  return result;
}

TraceModel import_model(const std::string& in, const ImportOptions& options, ImportResult* result) {
  import::ImportInput input(in, options.threads);
  ImportResult r;
  import::ImportedTrace trace;
  read_import(input, import::choose_importer(input, options.format), trace, r);
  auto t2 = Clock::now();
  ModelBuilder builder(in, import_writer_options(in));
  import::WriteSummary s;
  TraceModel model;
  try {
    model = import::build_imported(trace, input.strings(), builder, s);
  } catch (const ImportError& e) {
    throw ImportError(fmt::format("{}: {}", in, e.what()));
  }
  r.write_seconds = seconds_since(t2);
  take_summary(trace, s, r);
  if (result != nullptr) *result = std::move(r);
  return model;
}

}  // namespace loupe::prof
