// The trace reader on any bytes: a loupe trace, a damaged one, anything.
// A file it accepts must also survive every analysis.
#include "fuzz_input.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/trace_query.h"
#include "loupe/prof/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = loupe::fuzz::write_input(data, size, ".db");
  try {
    loupe::prof::summarize_trace(path);
  } catch (const loupe::prof::TraceError&) {
  }
  try {
    loupe::prof::TraceModel m = loupe::prof::load_trace(path, {.threads = 1});
    loupe::prof::analyze(m);
  } catch (const loupe::prof::TraceError&) {
  }
  return 0;
}
