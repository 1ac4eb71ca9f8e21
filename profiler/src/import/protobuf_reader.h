// Protocol Buffers' wire format, read without a schema or a library: a
// message is a run of fields, each a key (its number and wire type) and a
// value: a varint, 8 or 4 bytes, or a length and that many bytes (a
// string, a nested message or a packed run of varints). Enough for pprof's
// profile.proto (JAX's device memory profiles).
//
// The bytes are a stranger's: every length is checked against what is
// left, a varint longer than ten bytes and the group wire types, which
// proto3 does not use, are refused, and nothing recurses, so damage is a
// ProtoError naming the byte, never a read past the end or a deep stack.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace loupe::prof::import {

class ProtoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class WireType : uint8_t { varint = 0, fixed64 = 1, length = 2, fixed32 = 5 };

struct ProtoField {
  uint32_t number = 0;
  WireType wire = WireType::varint;
  uint64_t varint = 0;     // varint, fixed64 and fixed32 values
  std::string_view bytes;  // length-delimited values
  size_t offset = 0;       // where `bytes` begin in the whole input
};

class ProtoReader {
 public:
  // The whole input, a top-level message.
  explicit ProtoReader(std::string_view message) : bytes_(message) {}
  // A message nested in a length-delimited field: its errors name bytes of
  // the whole input.
  explicit ProtoReader(const ProtoField& f) : bytes_(f.bytes), base_(f.offset) {}
  // Reads the next field into `f`; false at the end of the message.
  // Throws ProtoError for a truncated or malformed field.
  bool next(ProtoField& f);

 private:
  std::string_view bytes_;
  size_t base_ = 0, at_ = 0, field_start_ = 0;
};

// The varints of a repeated field, packed (one length field) or not (one
// varint field each), appended to `out`. Throws ProtoError.
void append_varints(const ProtoField& f, std::vector<uint64_t>& out);

}  // namespace loupe::prof::import
