#include "analysis/memory_live.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "analysis/memory_blocks.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

BlocksByAddress replay(const MemoryEvents& me, size_t from, size_t to, int64_t* unseen_freed) {
  BlocksByAddress live;
  for (size_t i = from; i < to && i < me.size(); ++i) {
    if (me.kind[i] == MemoryEventKind::alloc) live[me.address[i]] = {me.bytes[i], me.callsite[i], me.time[i]};
    if (me.kind[i] != MemoryEventKind::free) continue;
    if (live.erase(me.address[i]) == 0 && unseen_freed != nullptr) *unseen_freed += me.bytes[i];
  }
  return live;
}

namespace {

// When each block live after `index` was freed, for those the trace frees.
std::unordered_map<uint64_t, int64_t> frees_after(const MemoryEvents& me, size_t index, const BlocksByAddress& live) {
  std::unordered_map<uint64_t, int64_t> freed;
  for (size_t i = index + 1; i < me.size() && freed.size() < live.size(); ++i) {
    if (me.kind[i] == MemoryEventKind::free && live.count(me.address[i])) freed.emplace(me.address[i], me.time[i]);
  }
  return freed;
}

}  // namespace

LiveBlocks live_after(const Context& ctx, const MemoryEvents& me, size_t index) {
  LiveBlocks out;
  BlocksByAddress live = replay(me, 0, index + 1, &out.freed_from_before);
  std::unordered_map<uint64_t, int64_t> freed_at = frees_after(me, index, live);
  std::map<std::string, std::pair<int64_t, uint64_t>> by_site;  // bytes, blocks
  for (const auto& [addr, b] : live) {
    std::pair<int64_t, uint64_t>& site = by_site[allocation_site(ctx, b.callsite, b.time)];
    site.first += b.bytes;
    ++site.second;
    auto f = freed_at.find(addr);
    BlockCategory c = categorize(ctx, b.time, f == freed_at.end() ? std::nullopt : std::optional(f->second));
    out.by_category[size_t(c)] += b.bytes;
  }
  out.sites.assign(by_site.begin(), by_site.end());
  std::sort(out.sites.begin(), out.sites.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  return out;
}

std::vector<std::pair<BlockCategory, int64_t>> told_categories(const LiveBlocks& live) {
  std::vector<std::pair<BlockCategory, int64_t>> out;
  bool told = false;
  for (size_t c = 0; c < kBlockCategories; ++c) {
    if (live.by_category[c] == 0) continue;
    out.emplace_back(BlockCategory(c), live.by_category[c]);
    told = told || BlockCategory(c) != BlockCategory::unknown;
  }
  if (!told) out.clear();
  return out;
}

void add_live_categories(Finding& f, std::string_view when, const LiveBlocks& live) {
  for (auto [category, bytes] : told_categories(live)) {
    f.evidence.push_back({fmt::format("at {}: {}", when, category_name(category)),
                          fmt::format("{}: {}", format_bytes(bytes), category_evidence(category))});
  }
}

void add_live_sites(Finding& f, std::string_view when, const LiveSites& sites) {
  for (size_t k = 0; k < sites.size() && k < 5; ++k) {
    const auto& [site, bytes_blocks] = sites[k];
    f.evidence.push_back({fmt::format("live at {}: {}", when, site.empty() ? "unknown call site" : site),
                          fmt::format("{} in {} block{}", format_bytes(bytes_blocks.first),
                                      format_count(bytes_blocks.second), bytes_blocks.second == 1 ? "" : "s")});
  }
}

// The category of the block each event allocates or frees, by event;
// kBlockCategories for a free of a block the trace never allocated and for
// events that are neither.
std::vector<uint8_t> event_categories(const Context& ctx, const MemoryEvents& me) {
  constexpr auto none = uint8_t(kBlockCategories);
  std::vector<uint8_t> out(me.size(), none);
  std::unordered_map<uint64_t, size_t> open;  // address -> its alloc event
  std::vector<size_t> freed_by(me.size(), me.size());
  for (size_t i = 0; i < me.size(); ++i) {
    if (me.kind[i] == MemoryEventKind::alloc) open[me.address[i]] = i;
    if (me.kind[i] != MemoryEventKind::free) continue;
    auto it = open.find(me.address[i]);
    if (it == open.end()) continue;
    freed_by[it->second] = i;
    open.erase(it);
  }
  for (size_t i = 0; i < me.size(); ++i) {
    if (me.kind[i] != MemoryEventKind::alloc) continue;
    size_t f = freed_by[i];
    out[i] = uint8_t(categorize(ctx, me.time[i], f < me.size() ? std::optional(me.time[f]) : std::nullopt));
    if (f < me.size()) out[f] = out[i];
  }
  return out;
}

}  // namespace loupe::prof::analysis

namespace loupe::prof {

LiveMemory live_memory_at(const TraceModel& model, uint32_t table, int64_t t) {
  using namespace analysis;
  LiveMemory out;
  if (table >= model.memory.size() || model.memory[table].size() == 0) return out;
  const MemoryEvents& me = model.memory[table];
  auto after = std::upper_bound(me.time.begin(), me.time.end(), t);
  out.allocated = allocated_at(me, t);
  if (after == me.time.begin()) {
    out.held_before = allocated_before(me);
    return out;
  }
  AnalysisOptions options;
  Context ctx(model, options);
  LiveBlocks live = live_after(ctx, me, size_t(after - me.time.begin()) - 1);
  out.held_before = std::max<int64_t>(0, allocated_before(me) - live.freed_from_before);
  for (auto [category, bytes] : told_categories(live)) out.by_category.emplace_back(category_name(category), bytes);
  for (auto& [site, bytes_blocks] : live.sites)
    out.sites.push_back({.site = site, .bytes = bytes_blocks.first, .blocks = bytes_blocks.second});
  return out;
}

std::vector<CategoryOverTime> memory_categories_over_time(const TraceModel& model, uint32_t table) {
  using namespace analysis;
  if (table >= model.memory.size() || model.count_host_spans() == 0) return {};
  const MemoryEvents& me = model.memory[table];
  AnalysisOptions options;
  Context ctx(model, options);
  std::vector<uint8_t> category = event_categories(ctx, me);
  std::array<std::vector<int64_t>, kBlockCategories> bytes;
  for (uint8_t c : category)
    if (c < kBlockCategories && bytes[c].empty()) bytes[c].resize(me.size());
  std::array<int64_t, kBlockCategories> live{};
  for (size_t i = 0; i < me.size(); ++i) {
    if (category[i] < kBlockCategories)
      live[category[i]] += me.kind[i] == MemoryEventKind::alloc ? me.bytes[i] : -me.bytes[i];
    for (size_t c = 0; c < kBlockCategories; ++c)
      if (!bytes[c].empty()) bytes[c][i] = live[c];
  }
  std::vector<CategoryOverTime> out;
  for (size_t c = 0; c < kBlockCategories; ++c) {
    if (BlockCategory(c) == BlockCategory::unknown || bytes[c].empty()) continue;
    out.push_back({.category = std::string(category_name(BlockCategory(c))), .bytes = std::move(bytes[c])});
  }
  return out;
}

}  // namespace loupe::prof
