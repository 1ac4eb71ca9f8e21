// A 64-bit hash of a file's whole content, to name an imported trace in
// the cache (trace_cache.h) by what it holds rather than where it lies.
// Not cryptographic: it tells apart the files a person profiles, and the
// cache checks what it reads back as it checks any trace.
#pragma once

#include <cstdint>
#include <string>

namespace loupe::prof::open {

struct ContentHash {
  uint64_t hash = 0;
  uint64_t bytes = 0;  // the file's size
};

// Reads `path` through the input gate (input_file.h); throws FileError.
ContentHash hash_file(const std::string& path);

// The same hash of bytes in memory (for tests: hash_file of a file holding
// `bytes` gives the same).
uint64_t hash_bytes(const void* data, size_t size);

}  // namespace loupe::prof::open
