#include "loupe/prof/import.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <iterator>

#include "import/byte_source.h"
#include "import/chrome_events.h"
#include "import/imported_trace.h"
#include "import/json_reader.h"
#include "import/mappings.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof {

namespace {

bool is_sqlite(const std::string& head) {
  return head.size() >= 16 && std::memcmp(head.data(), "SQLite format 3", 16) == 0;
}

bool is_json_format(ImportFormat f) {
  return f == ImportFormat::kineto || f == ImportFormat::chrome || f == ImportFormat::jax;
}

}  // namespace

std::string_view import_format_name(ImportFormat format) {
  for (const ImportFormatName& f : kImportFormats) {
    if (f.format == format) return f.name;
  }
  return "?";
}

ImportFormat parse_import_format(std::string_view name) {
  for (const ImportFormatName& f : kImportFormats) {
    if (name == f.name) return f.format;
  }
  throw ImportError(fmt::format("unknown import format '{}' (expected {})", name, import_format_names()));
}

std::string import_format_names(size_t first) {
  std::string names;
  const size_t n = std::size(kImportFormats);
  for (size_t i = first; i < n; ++i) {
    names += fmt::format("{}{}", i == first ? "" : i + 1 == n ? " or " : ", ", kImportFormats[i].name);
  }
  return names;
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

ImportFormat detect_import_format(const std::string& path) {
  std::string head = import::read_file_head(path, 100);
  if (head.empty()) throw ImportError(fmt::format("{}: the file is empty", path));
  if (is_sqlite(head)) {
    if (!import::is_nsys_export(path)) {
      throw ImportError(fmt::format("{}: a SQLite database, but not an Nsight Systems export", path));
    }
    return ImportFormat::nsys;
  }
  // JSON: the dialect shows in the content, so the document is read.
  import::StringPool strings;
  import::ChromeTrace raw;
  auto source = import::open_byte_source(path);
  import::read_chrome_json(*source, path, strings, raw);
  ImportFormat format = import::detect_json_dialect(raw, strings);
  return format;
}

ImportResult import_trace(const std::string& in, const std::string& out, const ImportOptions& options) {
  std::string head = import::read_file_head(in, 100);
  if (head.empty()) throw ImportError(fmt::format("{}: the file is empty", in));
  bool sqlite = is_sqlite(head);
  if (options.format == ImportFormat::nsys && !sqlite) {
    throw ImportError(
        fmt::format("{}: not an Nsight Systems SQLite export (not a SQLite file); export one with "
                    "'nsys export --type sqlite'",
                    in));
  }
  if (is_json_format(options.format) && sqlite) {
    throw ImportError(
        fmt::format("{}: a SQLite database, not a {} JSON trace", in, import_format_name(options.format)));
  }
  if (sqlite && !import::is_nsys_export(in)) {
    throw ImportError(fmt::format(
        "{}: a SQLite database, but not an Nsight Systems export (no CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS tables)",
        in));
  }
  struct stat in_st {};
  ::stat(in.c_str(), &in_st);

  // Written beside the output and moved into place by close(): a failed
  // import leaves the output as it was, and never a half-written file.
  ImportResult result;
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  auto t0 = Clock::now();
  TraceWriter writer(out, {.producer = "loupe import", .live = false, .inputs = {in}});
  import::StringPool strings;
  import::ImportedTrace trace;
  if (sqlite) {
    import::read_nsys(in, strings, trace);
    result.read_seconds = seconds_since(t0);
    result.format = ImportFormat::nsys;
    result.input_bytes = uint64_t(in_st.st_size);
  } else {
    import::ChromeTrace raw;
    {
      auto source = import::open_byte_source(in, options.threads != 1);
      import::read_chrome_json(*source, in, strings, raw, options.threads);
    }
    result.read_seconds = seconds_since(t0);
    auto t1 = Clock::now();
    result.input_bytes = raw.bytes;
    ImportFormat format =
        options.format == ImportFormat::auto_detect ? import::detect_json_dialect(raw, strings) : options.format;
    result.format = format;
    if (format == ImportFormat::kineto) {
      import::map_kineto(raw, strings, trace);
    } else if (format == ImportFormat::jax) {
      import::map_jax(raw, strings, trace);
    } else {
      import::map_chrome(raw, strings, trace);
    }
    result.map_seconds = seconds_since(t1);
  }
  trace.meta["source_file"] = in;
  trace.meta["producer"] = fmt::format("loupe import ({})", import_format_name(result.format));
  result.source_events = trace.source_events;
  take_distributed_meta(trace.meta, result);
  auto t2 = Clock::now();
  import::WriteSummary s;
  try {
    s = import::write_imported(trace, strings, writer);
  } catch (const ImportError& e) {
    throw ImportError(fmt::format("{}: {}", in, e.what()));
  }
  result.skipped_by_kind = trace.skipped;  // with what writing left out
  result.write_seconds = seconds_since(t2);
  result.rows_written = s.rows;
  result.skipped = s.skipped;
  result.rows_by_table = s.rows_by_table;
  for (auto it = result.skipped_by_kind.begin(); it != result.skipped_by_kind.end();) {
    it = it->second == 0 ? result.skipped_by_kind.erase(it) : std::next(it);
  }
  return result;
}

}  // namespace loupe::prof
