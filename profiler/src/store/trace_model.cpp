#include "loupe/prof/trace_model.h"

namespace loupe::prof {

namespace {
template <typename T>
const T* find_by_id(const std::vector<T>& sorted, uint32_t id) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), id, [](const T& x, uint32_t k) { return x.id < k; });
  return it != sorted.end() && it->id == id ? &*it : nullptr;
}

template <typename Tracks>
uint64_t count(const Tracks& tracks) {
  uint64_t n = 0;
  for (const auto& t : tracks) n += t.size();
  return n;
}

template <typename Tracks>
uint64_t column_bytes(Tracks& tracks) {
  uint64_t n = 0;
  for (auto& t : tracks) {
    std::apply(
        [&](auto&... col) {
          auto one = [&](auto& c) {
            n += c.capacity() * sizeof(c[0]);
            if constexpr (std::is_same_v<std::decay_t<decltype(c[0])>, std::string>) {
              for (const std::string& s : c) n += s.capacity() > 15 ? s.capacity() : 0;
            }
          };
          (one(col), ...);
        },
        t.columns());
  }
  return n;
}
}  // namespace

const Device* TraceModel::device(uint32_t id) const { return find_by_id(devices, id); }
const Thread* TraceModel::thread(uint32_t id) const { return find_by_id(threads, id); }
const CallSite* TraceModel::callsite(uint32_t id) const { return find_by_id(callsites, id); }

const Stream* TraceModel::stream(uint32_t dev, uint32_t str) const {
  for (const Stream& s : streams) {
    if (s.device == dev && s.stream == str) return &s;
  }
  return nullptr;
}

uint64_t TraceModel::count_host_spans() const { return count(host_spans); }
uint64_t TraceModel::count_device_ops() const { return count(device_ops); }

uint64_t TraceModel::total_events() const {
  uint64_t n = 0;
#define LOUPE_COUNT_TABLE(Row, Track, table, member) n += count(member);
  LOUPE_EVENT_TABLES(LOUPE_COUNT_TABLE)
#undef LOUPE_COUNT_TABLE
  return n;
}

uint64_t TraceModel::memory_bytes() const {
  auto& self = const_cast<TraceModel&>(*this);  // columns() hands out references
  uint64_t n = 0;
  for (const std::string& s : strings) n += sizeof(std::string) + (s.capacity() > 15 ? s.capacity() : 0);
  n += column_bytes(self.host_spans) + column_bytes(self.instants) + column_bytes(self.counters);
  n += column_bytes(self.device_ops) + column_bytes(self.launches) + column_bytes(self.transfers);
  n += column_bytes(self.memory) + column_bytes(self.compiles) + column_bytes(self.steps);
  return n;
}

}  // namespace loupe::prof
