#include "exec/callsite_cache.h"

#include <unordered_map>

namespace loupe::rt::exec {

namespace {
struct Key {
  const char* file;
  const char* function;
  uint32_t line, column;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    return std::hash<const void*>{}(k.file) ^ (std::hash<const void*>{}(k.function) << 1) ^ (size_t(k.line) << 20) ^
           size_t(k.column);
  }
};
}  // namespace

prof::CallSiteId site_of(const std::source_location& loc) {
  if (loc.file_name() == nullptr || loc.line() == 0) return prof::kNoCallSite;
  thread_local std::unordered_map<Key, prof::CallSiteId, KeyHash> cache;
  Key key{loc.file_name(), loc.function_name(), loc.line(), loc.column()};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  prof::CallSiteId id = prof::callsite(loc);
  cache.emplace(key, id);
  return id;
}

}  // namespace loupe::rt::exec
