// The Nsight Systems SQLite importer on any bytes.
#include "fuzz_input.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/import.h"
#include "loupe/prof/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in = loupe::fuzz::write_input(data, size, ".sqlite"), out = loupe::fuzz::output_path();
  try {
    loupe::prof::import_trace(in, out, {.format = loupe::prof::ImportFormat::nsys, .threads = 1});
    loupe::prof::analyze(loupe::prof::load_trace(out, {.threads = 1}));
  } catch (const loupe::prof::ImportError&) {
  }
  return 0;
}
