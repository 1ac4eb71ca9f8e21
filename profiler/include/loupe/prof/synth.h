// A synthetic but realistic trace, for tests, benchmarks and the viewer:
// a data-parallel training run on two devices with several streams, host
// threads with nested spans, launches linked to kernels, copies in both
// directions (a synchronous read-back every step), memory that climbs and
// falls with activations, compile-cache hits and a few recompiles, and the
// idle gaps all of this causes. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <string>

namespace loupe::prof {

struct SynthOptions {
  uint64_t events = 100'000;  // exactly this many event rows are written
  uint64_t seed = 1;
};

struct SynthResult {
  uint64_t events = 0;
  uint64_t steps = 0;
  int64_t duration_ns = 0;
};

// Writes the trace to `path` (replacing it); throws StoreError.
SynthResult write_synthetic_trace(const std::string& path, const SynthOptions& options);

}  // namespace loupe::prof
