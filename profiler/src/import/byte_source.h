// Where the importers' bytes come from: a plain file, or a gzip/zlib stream
// inflated on the fly. Bytes are read straight into the caller's buffer (the
// JSON reader's padded parse buffer), so nothing is copied twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace loupe::prof::import {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` bytes into `dst`; returns 0 only at the end of the
  // data. Throws ImportError (naming the file) on a read error or damaged
  // compressed data.
  virtual size_t read(char* dst, size_t n) = 0;
  // Bytes of the file itself consumed so far (compressed bytes for gzip).
  virtual uint64_t file_offset() const = 0;
  virtual bool compressed() const = 0;
  // The expected number of bytes read() will yield (0 if unknown): the file
  // size, or what gzip's trailer records (modulo 4 GiB). A hint only.
  virtual uint64_t size_hint() const = 0;
};

// Opens `path`; gzip and zlib streams (by their magic bytes) are inflated,
// anything else is read as it is. With `prefetch` (and more than one core)
// a compressed stream is inflated on a thread of its own, a few MiB ahead
// of the reader. Throws ImportError if the file cannot be opened.
std::unique_ptr<ByteSource> open_byte_source(const std::string& path, bool prefetch = false);

// The first `n` bytes of the file as stored (not inflated); fewer if the
// file is shorter. Throws ImportError if it cannot be read.
std::string read_file_head(const std::string& path, size_t n);

}  // namespace loupe::prof::import
