// The Kineto / Chrome JSON importer on any bytes, then the reader and the
// analyses on whatever it wrote.
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return loupe::fuzz::import_and_analyze(data, size, ".json", loupe::prof::ImportFormat::kineto);
}
