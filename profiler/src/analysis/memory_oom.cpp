#include "analysis/memory_oom.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "analysis/memory_blocks.h"
#include "analysis/memory_live.h"
#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

enum class Verdict : uint8_t {
  full,         // what was allocated and the request add up to more than the device has
  fragmented,   // enough was free, in the cache or on the device, but not in one piece
  cannot_tell,  // neither the capacity nor the reserved total is known
};

struct AtOom {
  int64_t request = 0, allocated = 0, reserved = 0, capacity = 0;
  int64_t cached_free() const { return reserved > allocated ? reserved - allocated : 0; }
  int64_t device_free() const { return capacity > reserved ? capacity - reserved : 0; }
};

Verdict verdict_of(const AtOom& at) {
  if (at.capacity > 0 && at.allocated + at.request > at.capacity) return Verdict::full;
  if (at.capacity > 0 || at.cached_free() >= at.request) return Verdict::fragmented;
  return Verdict::cannot_tell;
}

std::string verdict_text(const AtOom& at, Verdict v) {
  switch (v) {
    case Verdict::full:
      return fmt::format("the device was full: {} allocated + {} requested exceeds its {}", format_bytes(at.allocated),
                         format_bytes(at.request), format_bytes(at.capacity));
    case Verdict::fragmented:
      return fmt::format(
          "fragmentation: {} free in the allocator's cache and {} unreserved on the device, yet no block of {}",
          format_bytes(at.cached_free()), at.capacity > 0 ? format_bytes(at.device_free()) : "an unknown amount",
          format_bytes(at.request));
    case Verdict::cannot_tell:
      return "cannot tell from this trace whether the device was full or fragmented: it records neither the "
             "capacity nor a reserved total";
  }
  return "";
}

// The category holding the most of what was live, among those with
// evidence; unknown when none has any, or when what was held from before
// the trace (of no known category) is larger.
BlockCategory largest_known(const LiveBlocks& live, int64_t held_before) {
  auto best = BlockCategory::unknown;
  int64_t bytes = held_before;
  for (size_t c = 0; c + 1 < kBlockCategories; ++c) {
    if (live.by_category[c] > bytes) bytes = live.by_category[c], best = BlockCategory(c);
  }
  return best;
}

std::string advice_for(BlockCategory largest) {
  switch (largest) {
    case BlockCategory::activation:
      return "keep fewer activations for the backward: activation checkpointing (torch.utils.checkpoint, "
             "jax.checkpoint), or a smaller batch or sequence length";
    case BlockCategory::temporary:
      return "shrink the working memory of the op that failed: a memory-linear algorithm (fused attention instead of "
             "materialised scores), or the op applied in chunks";
    case BlockCategory::gradient:
    case BlockCategory::optimizer_state:
      return "shrink the training state: shard it across devices (FSDP, ZeRO), or keep the optimizer's state in "
             "lower precision";
    case BlockCategory::input: return "load smaller batches, or move them to the device one at a time";
    case BlockCategory::unknown:
      return "lower what is live when the request is made: a memory-linear algorithm (fused attention instead of "
             "materialised scores), a smaller batch or sequence length, or `del` of what is kept from before (a "
             "previous step's outputs, a list of them)";
  }
  return "";
}

std::string suggestion_for(Verdict v, const AtOom& at, const LiveBlocks& live, int64_t held_before) {
  switch (v) {
    case Verdict::fragmented: {
      std::string s =
          "let the allocator reuse what is free for larger blocks (PyTorch: "
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), or allocate the largest, longest-lived buffers first "
          "and keep their sizes fixed from step to step";
      // A request of a quarter of the device or more fails again at the
      // next size up, however the memory is laid out.
      if (at.capacity > 0 && at.request * 4 >= at.capacity) {
        s += fmt::format(
            "; but this one request is {} of the device: make it smaller, with a memory-linear algorithm (fused "
            "attention instead of materialised scores), the op applied in chunks, or a smaller batch or sequence "
            "length",
            format_percent(double(at.request) / double(at.capacity)));
      }
      return s;
    }
    case Verdict::full:
    case Verdict::cannot_tell: return advice_for(largest_known(live, held_before));
  }
  return "";
}

// By category where any block's ops tell; by site unless the blocks are
// those listed at the peak already.
void add_live(Finding& f, const LiveBlocks& live, int64_t held_before, const LiveSites& peak_sites) {
  if (held_before > 0) {
    f.evidence.push_back({"at the out-of-memory: held from before the trace",
                          fmt::format("{}: in no block of the trace", format_bytes(held_before))});
  }
  add_live_categories(f, "the out-of-memory", live);
  if (live.sites == peak_sites) {
    f.evidence.push_back({"live at the out-of-memory", "the blocks live at the peak, above"});
    return;
  }
  add_live_sites(f, "the out-of-memory", live.sites);
}

}  // namespace

void add_oom_post_mortem(Finding& f, const Context& ctx, const MemoryEvents& me, size_t oom, int64_t capacity,
                         const LiveSites& peak_sites) {
  AtOom at{
      .request = me.bytes[oom], .allocated = me.allocated[oom], .reserved = me.reserved[oom], .capacity = capacity};
  Verdict v = verdict_of(at);
  std::string site = me.callsite[oom] != 0 ? ctx.callsite_text(me.callsite[oom]) : "";
  f.title = fmt::format("{}: out of memory {}: a request for {}{} failed with {} allocated{}",
                        device_label(ctx, me.device), ctx.time_text(me.time[oom]), format_bytes(at.request),
                        site.empty() ? "" : " at " + site, format_bytes(at.allocated),
                        capacity > 0 ? fmt::format(" of {}", format_bytes(capacity)) : std::string());
  f.evidence.push_back(
      {"out-of-memory request", fmt::format("{}{}", format_bytes(at.request), site.empty() ? "" : " at " + site)});
  f.evidence.push_back({"held then", fmt::format("{} allocated, {} reserved{}", format_bytes(at.allocated),
                                                 at.reserved > 0 ? format_bytes(at.reserved) : "unknown",
                                                 capacity > 0 ? fmt::format(" of {}", format_bytes(capacity)) : "")});
  f.evidence.push_back({"verdict", verdict_text(at, v)});
  LiveBlocks live = live_after(ctx, me, oom);
  int64_t held_before = std::max<int64_t>(0, allocated_before(me) - live.freed_from_before);
  add_live(f, live, held_before, peak_sites);
  f.suggestion = suggestion_for(v, at, live, held_before);
}

}  // namespace loupe::prof::analysis
