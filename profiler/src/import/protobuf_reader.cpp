#include "import/protobuf_reader.h"

#include <fmt/format.h>

namespace loupe::prof::import {

namespace {

// The varint at bytes[at], moving `at` past it; `base` places the bytes in
// the whole input, for the message.
uint64_t decode_varint(std::string_view bytes, size_t& at, size_t base) {
  uint64_t value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (at >= bytes.size()) throw ProtoError(fmt::format("at byte {}: a varint runs past its end", base + at));
    auto b = uint8_t(bytes[at++]);
    value |= uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  throw ProtoError(fmt::format("at byte {}: a varint longer than 10 bytes", base + at));
}

}  // namespace

bool ProtoReader::next(ProtoField& f) {
  if (at_ >= bytes_.size()) return false;
  field_start_ = at_;
  uint64_t key = decode_varint(bytes_, at_, base_);
  if (key >> 3 == 0 || key >> 3 > 0x1fffffff) {
    throw ProtoError(fmt::format("at byte {}: field number 0 or past 2^29", base_ + field_start_));
  }
  f = ProtoField{.number = uint32_t(key >> 3)};
  auto fixed = [&](size_t n) {
    if (bytes_.size() - at_ < n) {
      throw ProtoError(fmt::format("at byte {}: a {}-byte value runs past the end", base_ + at_, n));
    }
    for (size_t k = 0; k < n; ++k) f.varint |= uint64_t(uint8_t(bytes_[at_ + k])) << (8 * k);
    at_ += n;
  };
  switch (key & 7) {
    case 0:
      f.wire = WireType::varint;
      f.varint = decode_varint(bytes_, at_, base_);
      return true;
    case 1:
      f.wire = WireType::fixed64;
      fixed(8);
      return true;
    case 5:
      f.wire = WireType::fixed32;
      fixed(4);
      return true;
    case 2: {
      f.wire = WireType::length;
      uint64_t n = decode_varint(bytes_, at_, base_);
      if (n > bytes_.size() - at_) {
        throw ProtoError(fmt::format("at byte {}: a field of {} bytes runs past the end", base_ + field_start_, n));
      }
      f.bytes = bytes_.substr(at_, size_t(n));
      f.offset = base_ + at_;
      at_ += size_t(n);
      return true;
    }
    default:
      throw ProtoError(
          fmt::format("at byte {}: wire type {} (a group, or not protobuf)", base_ + field_start_, key & 7));
  }
}

void append_varints(const ProtoField& f, std::vector<uint64_t>& out) {
  if (f.wire == WireType::varint) {
    out.push_back(f.varint);
    return;
  }
  if (f.wire != WireType::length) {
    throw ProtoError(fmt::format("field {}: neither a varint nor a packed run of them", f.number));
  }
  size_t at = 0;
  while (at < f.bytes.size()) out.push_back(decode_varint(f.bytes, at, f.offset));
}

}  // namespace loupe::prof::import
