// Interning an importer's strings into its StringPool, with a small cache
// in front.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "import/string_pool.h"

namespace loupe::prof::import {

// A small direct-mapped cache in front of the pool: event names and
// categories repeat, and a hit costs a short hash and a compare instead of
// a lookup in the pool's hash map.
class InternCache {
 public:
  explicit InternCache(StringPool& strings) : strings_(strings) {}
  StringId operator()(std::string_view s) {
    uint64_t h = s.size() * 0x9e3779b97f4a7c15ull;
    if (s.size() >= 8) {
      uint64_t head, tail;
      std::memcpy(&head, s.data(), 8);
      std::memcpy(&tail, s.data() + s.size() - 8, 8);
      h ^= head * 0xbf58476d1ce4e5b9ull ^ tail * 0x94d049bb133111ebull;
    } else {
      for (char c : s) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
    }
    Slot& slot = slots_[(h ^ (h >> 29)) & (kSlots - 1)];
    if (slot.valid && slot.text == s) return slot.id;
    StringId id = strings_.intern(s);
    slot = {strings_.text(id), id, true};  // the pool's copy outlives the cache
    return id;
  }

 private:
  static constexpr size_t kSlots = 1024;
  struct Slot {
    std::string_view text;
    StringId id = 0;
    bool valid = false;
  };
  StringPool& strings_;
  Slot slots_[kSlots];
};

}  // namespace loupe::prof::import
