// Galloping search: where a frame's successive searches land a little
// further along each time, probing near first finds the answer in a few
// cache lines instead of a full binary search's many.
#pragma once

#include <algorithm>
#include <cstddef>

namespace loupe::view {

// The first index in [from, n) whose key is >= `key` (n if none), in keys
// sorted ascending: steps of 1, 2, 4, ... from `from`, then a binary
// search within the last step.
template <typename Key, typename Value>
size_t gallop_lower_bound(const Key* keys, size_t from, size_t n, const Value& key) {
  size_t lo = from, hi = from, step = 1;
  while (hi < n && keys[hi] < key) {
    lo = hi + 1;
    hi = from + step;
    step *= 2;
  }
  hi = std::min(hi, n);
  return size_t(std::lower_bound(keys + lo, keys + hi, key) - keys);
}

}  // namespace loupe::view
