// The pprof memory profile importer on any bytes: the protobuf wire
// reader, then the profile's shape, then the analyses.
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return loupe::fuzz::import_and_analyze(data, size, ".prof", loupe::prof::ImportFormat::pprof_memory);
}
