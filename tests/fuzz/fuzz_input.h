// Helpers shared by the fuzz targets: each target is a LLVMFuzzerTestOneInput
// that libFuzzer drives (scripts/fuzz) and that the normal build replays
// over its corpus (ctest), so that a crash once found stays fixed.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "loupe/prof/analysis.h"
#include "loupe/prof/import.h"
#include "loupe/prof/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace loupe::fuzz {

// The fuzz input as a file (the parsers under test read files), in a
// directory private to this process.
inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/loupe-fuzz-XXXXXX";
    const char* made = mkdtemp(tmpl);
    return std::string(made ? made : "/tmp");
  }();
  std::string path = dir + "/input" + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f != nullptr) {
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

inline std::string output_path() { return write_input(nullptr, 0, ".out.db"); }

// An importer on the input (written with `suffix`), then the reader and the
// analyses on whatever it wrote. Bad input may only end in an ImportError.
inline int import_and_analyze(const uint8_t* data, size_t size, const char* suffix, prof::ImportFormat format) {
  std::string in = write_input(data, size, suffix), out = output_path();
  try {
    prof::import_trace(in, out, {.format = format, .threads = 1});
    prof::analyze(prof::load_trace(out, {.threads = 1}));
    // What every reading command does with a foreign file: the same
    // import, into a model without SQLite.
    prof::analyze(prof::import_model(in, {.format = format, .threads = 1}));
  } catch (const prof::ImportError&) {
  }
  return 0;
}

}  // namespace loupe::fuzz
