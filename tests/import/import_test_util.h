// Helpers for the import tests: writing small JSON (plain or gzip) inputs,
// importing them, and figures computed from a loaded TraceModel.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "covered_length.h"
#include "loupe/prof/import.h"
#include "loupe/prof/trace_model.h"
#include "loupe/prof/trace_reader.h"

namespace loupe::test {

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline std::string read_binary(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), unsigned(text.size())), int(text.size()));
  gzclose(f);
}

// Imports `in` to `out` and loads the result.
inline prof::TraceModel import_and_load(const std::string& in, const std::string& out,
                                        prof::ImportFormat format = prof::ImportFormat::auto_detect,
                                        prof::ImportResult* result = nullptr) {
  prof::ImportResult r = prof::import_trace(in, out, {.format = format});
  if (result) *result = r;
  return prof::load_trace(out);
}

// Busy time per device: the union of its device ops over all streams.
inline std::map<uint32_t, int64_t> busy_ns(const prof::TraceModel& m) {
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> intervals;
  for (const auto& t : m.device_ops) {
    for (size_t i = 0; i < t.size(); ++i) intervals[t.device].push_back({t.start[i], t.end(i)});
  }
  std::map<uint32_t, int64_t> busy;
  for (auto& [device, iv] : intervals) busy[device] = test::covered_length(std::move(iv));
  return busy;
}

// Every host span of the model, flattened: (thread, start, dur, name, kind, depth).
struct FlatSpan {
  uint32_t thread;
  int64_t start, dur;
  std::string name;
  prof::SpanKind kind;
  uint32_t depth;
};
inline std::vector<FlatSpan> all_spans(const prof::TraceModel& m) {
  std::vector<FlatSpan> out;
  for (const auto& t : m.host_spans) {
    for (size_t i = 0; i < t.size(); ++i) {
      out.push_back({t.thread, t.start[i], t.dur[i], m.str(t.name[i]), t.kind[i], t.depth[i]});
    }
  }
  return out;
}

}  // namespace loupe::test
