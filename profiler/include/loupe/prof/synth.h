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

// splitmix64: a small, portable generator, so that a seed gives the same
// trace with any standard library (the import benchmark's generated
// Kineto trace uses it for the same reason).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  int64_t uniform(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t state_;
};

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
