// A field of /proc/self/status (VmHWM: peak resident set, VmRSS: now) in
// bytes, for the benchmarks' memory figures.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

inline int64_t proc_status_bytes(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field, 0) == 0) return std::atoll(line.c_str() + std::char_traits<char>::length(field)) * 1024;
  }
  return 0;
}
