// Random numbers from explicit keys, as in JAX: a key is a small integer
// array, the same key always gives the same numbers, and split() derives
// independent keys. Keys are arrays, so a jitted function can take one as
// an argument without recompiling for each new key.
#pragma once

#include <cstdint>
#include <vector>

#include "loupe/rt/ops.h"

namespace loupe::rt::random {

Array key(uint64_t seed, Device device = default_device(), Loc loc = Loc::current());
// n keys derived from `key`, independent of it and of each other.
std::vector<Array> split(const Array& key, int n = 2, Loc loc = Loc::current());
// Standard normal (times stddev, plus mean) and uniform in [low, high).
Array normal(const Array& key, const Shape& shape, Dtype dtype = f32, double mean = 0, double stddev = 1,
             Loc loc = Loc::current());
Array uniform(const Array& key, const Shape& shape, Dtype dtype = f32, double low = 0, double high = 1,
              Loc loc = Loc::current());
// Integers uniform in [low, high).
Array randint(const Array& key, const Shape& shape, int64_t low, int64_t high, Dtype dtype = i32,
              Loc loc = Loc::current());

}  // namespace loupe::rt::random
