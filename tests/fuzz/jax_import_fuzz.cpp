// The JAX profiler trace importer on any bytes.
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return loupe::fuzz::import_and_analyze(data, size, ".json", loupe::prof::ImportFormat::jax);
}
