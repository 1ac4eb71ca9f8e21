// The time a set of [start, end) intervals covers, overlaps counted once:
// the tests' own reference for busy time, written apart from the
// profiler's interval code (profiler/src/analysis/intervals.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace loupe::test {

inline int64_t covered_length(std::vector<std::pair<int64_t, int64_t>> iv) {
  if (iv.empty()) return 0;
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, s = iv[0].first, e = iv[0].second;
  for (const auto& [a, b] : iv) {
    if (a > e) {
      total += e - s;
      s = a;
      e = b;
    } else {
      e = std::max(e, b);
    }
  }
  return total + (e - s);
}

}  // namespace loupe::test
