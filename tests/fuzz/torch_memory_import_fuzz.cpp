// The PyTorch memory snapshot importer on any bytes: the pickle reader, then
// the snapshot's shape, then the rebuilt totals and the analyses.
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return loupe::fuzz::import_and_analyze(data, size, ".pickle", loupe::prof::ImportFormat::torch_memory);
}
