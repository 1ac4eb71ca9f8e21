// The formats loupe imports, in one table (importers.cpp), as Perfetto
// registers its trace importers: each entry says what its files are made
// of, how to recognise one, and how to read it into the imported model.
// Detection, `--format`, the help, the messages and docs/import.md's table
// all loop over it; a format is one entry and the reader it names.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "import/chrome_events.h"
#include "import/imported_trace.h"
#include "import/pickle_reader.h"
#include "import/string_pool.h"
#include "loupe/prof/import.h"

namespace loupe::prof::import {

// What an input's bytes are: which importers can read it at all.
enum class Container : uint8_t { json, sqlite, pickle, protobuf };
std::string_view name_of(Container c);  // "JSON", "SQLite", "pickle", "protobuf"

// An input as far as the importers have read it: its first bytes, and its
// document once an importer needs it (JSON or a pickle), parsed once and
// shared by the dialects of its container.
class ImportInput {
 public:
  // Reads the first bytes; throws ImportError for a missing or empty file.
  ImportInput(std::string path, unsigned threads);
  const std::string& path() const { return path_; }
  Container container() const { return container_; }
  // The document, parsed on the first call. Throws ImportError.
  ChromeTrace& json();
  // The pickle, read on the first call. Throws ImportError.
  const PickleDoc& pickle();
  // The whole content, inflated, read on the first call (a protobuf).
  std::string_view whole();
  StringPool& strings() { return strings_; }
  // Frees the document once it is mapped (its strings stay in the pool):
  // the rows and what is made of them need the memory more.
  void release_document();
  double parse_seconds() const { return parse_seconds_; }
  uint64_t bytes() const;  // uncompressed JSON, pickle or protobuf, or the file's size
  // Whether the first bytes could begin a file of the container: JSON's
  // `{` or `[` after any whitespace, or another container's header.
  bool plausible() const { return plausible_; }

 private:
  std::string path_;
  unsigned threads_;
  Container container_;
  bool plausible_ = true;
  StringPool strings_;
  std::optional<ChromeTrace> json_;
  std::optional<PickleDoc> pickle_;
  std::optional<std::string> whole_;
  uint64_t pickle_bytes_ = 0;
  uint64_t bytes_read_ = 0;  // the document's size, once released
  double parse_seconds_ = 0;
};

struct Importer {
  ImportFormat format;
  std::string_view name;           // as `--format` takes it
  std::string_view title;          // "PyTorch profiler (Kineto) JSON"
  std::string_view made_by;        // how a user gets such a file
  std::string_view recognised_by;  // what `auto` looks for (Markdown)
  std::string_view hint;           // what to do when asked for and the file is not it ("" if nothing)
  Container container;
  // Whether any file of its container can be read as this format when a
  // user asks for it (a JSON dialect), or only one it recognises.
  bool reads_any_of_its_container;
  // Whether the input is this format; detection asks each in table order.
  bool (*recognises)(ImportInput& input);
  void (*read)(ImportInput& input, ImportedTrace& out);
};

std::span<const Importer> importers();

// The importer for `format` (auto_detect: the first that recognises the
// input). Throws ImportError naming what the file is and what to do.
const Importer& choose_importer(ImportInput& input, ImportFormat format);

}  // namespace loupe::prof::import
