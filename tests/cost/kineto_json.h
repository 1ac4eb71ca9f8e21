// A Kineto trace's raw JSON, read straight from its .json.gz, so that the
// tests of what loupe computes from a trace's op records compare against
// the records themselves and nothing of loupe's in between.
#pragma once

#include <zlib.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace loupe::test {

inline nlohmann::json read_gzipped_json(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  std::string text;
  char buffer[1 << 16];
  for (int n; (n = gzread(f, buffer, sizeof buffer)) > 0;) text.append(buffer, size_t(n));
  gzclose(f);
  return nlohmann::json::parse(text);
}

}  // namespace loupe::test
