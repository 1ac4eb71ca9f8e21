// The XPlane importer on any bytes: the protobuf wire reader, the XSpace's
// shape, JAX's mapping, then the analyses.
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return loupe::fuzz::import_and_analyze(data, size, ".xplane.pb", loupe::prof::ImportFormat::xplane);
}
