// The Kineto / Chrome JSON importer on any bytes, then the reader and the
// analyses on whatever it wrote.
#include "fuzz_input.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/import.h"
#include "loupe/prof/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in = loupe::fuzz::write_input(data, size, ".json"), out = loupe::fuzz::output_path();
  try {
    loupe::prof::import_trace(in, out, {.format = loupe::prof::ImportFormat::kineto, .threads = 1});
    loupe::prof::analyze(loupe::prof::load_trace(out, {.threads = 1}));
  } catch (const loupe::prof::ImportError&) {
  }
  return 0;
}
