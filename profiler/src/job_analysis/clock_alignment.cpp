// Aligning the ranks' clocks. A collective ends at nearly the same instant
// on every rank that took part (none can finish before the last has sent
// its part), so the difference of two ranks' clocks is the difference of
// the ends they recorded for the same collectives; the median of those
// differences ignores the few a late kernel-end record skews. Ranks are
// aligned outward from the reference through the ranks they share
// collectives with (a breadth-first walk), so a rank that shares a group
// only with another non-reference rank is still aligned.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>

#include "job_analysis/job_context.h"

namespace loupe::prof::job {

namespace {

// For each pair of ranks (lower index first), the differences of the ends
// of the collectives they share: the second's end minus the first's.
using EndDifferences = std::map<std::pair<size_t, size_t>, std::vector<int64_t>>;

EndDifferences end_differences(const std::vector<Matched>& matched) {
  EndDifferences out;
  for (const Matched& m : matched) {
    const Arrival& hub = m.ranks.front();
    for (size_t i = 1; i < m.ranks.size(); ++i) out[{hub.rank, m.ranks[i].rank}].push_back(m.ranks[i].end - hub.end);
  }
  return out;
}

// Aligns `to` against the aligned rank `from`; `sign` is +1 when the
// differences are to's ends minus from's.
RankClock aligned_against(const RankClock& from, const std::vector<int64_t>& differences, int64_t rank, int sign) {
  int64_t median = quantile(differences, 0.5);
  int64_t residual = 0;
  for (int64_t d : differences) residual = std::max(residual, std::abs(d - median));
  return {.rank = rank,
          .aligned = true,
          .via = from.rank,
          .matched = differences.size(),
          .offset_ns = from.offset_ns + sign * median,
          .residual_ns = residual};
}

void walk(JobContext& ctx, const EndDifferences& differences) {
  std::vector<std::vector<std::pair<size_t, const EndDifferences::value_type*>>> neighbours(ctx.ranks.size());
  for (const auto& entry : differences) {
    neighbours[entry.first.first].push_back({entry.first.second, &entry});
    neighbours[entry.first.second].push_back({entry.first.first, &entry});
  }
  ctx.clocks[0] = {.rank = ctx.ranks[0].rank, .aligned = true, .via = ctx.ranks[0].rank};
  std::deque<size_t> queue = {0};
  while (!queue.empty()) {
    size_t a = queue.front();
    queue.pop_front();
    for (const auto& [b, entry] : neighbours[a]) {
      if (ctx.clocks[b].aligned) continue;
      int sign = entry->first.first == a ? 1 : -1;
      ctx.clocks[b] = aligned_against(ctx.clocks[a], entry->second, ctx.ranks[b].rank, sign);
      queue.push_back(b);
    }
  }
}

// Moves the matched collectives onto the aligned timeline and finds each
// one's last arrival.
void place(JobContext& ctx) {
  for (Matched& m : ctx.matched) {
    std::vector<int64_t> ends;
    for (Arrival& a : m.ranks) {
      a.arrival -= ctx.clocks[a.rank].offset_ns;
      a.end -= ctx.clocks[a.rank].offset_ns;
      ends.push_back(a.end);
    }
    m.end = quantile(std::move(ends), 0.5);
    std::vector<size_t> order(m.ranks.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 2, order.end(),
                      [&](size_t x, size_t y) { return m.ranks[x].arrival > m.ranks[y].arrival; });
    m.last = order[0];
    m.last_arrival = m.ranks[order[0]].arrival;
    m.second_arrival = m.ranks[order[1]].arrival;
  }
}

}  // namespace

void align_clocks(JobContext& ctx) {
  ctx.clocks.assign(ctx.ranks.size(), {});
  for (size_t r = 0; r < ctx.ranks.size(); ++r) ctx.clocks[r].rank = ctx.ranks[r].rank;
  if (!ctx.ranks.empty()) walk(ctx, end_differences(ctx.matched));
  place(ctx);
  bool any = false;
  for (size_t r = 0; r < ctx.ranks.size(); ++r) {
    const RankSummary& s = ctx.ranks[r];
    if (s.window_end <= s.window_start) continue;
    int64_t start = ctx.aligned(r, s.window_start), end = ctx.aligned(r, s.window_end);
    ctx.window_start = any ? std::min(ctx.window_start, start) : start;
    ctx.window_end = any ? std::max(ctx.window_end, end) : end;
    any = true;
  }
}

int64_t JobContext::tolerance(const Matched& m) const {
  size_t second = m.last == 0 ? 1 : 0;
  for (size_t i = 0; i < m.ranks.size(); ++i) {
    if (i != m.last && m.ranks[i].arrival > m.ranks[second].arrival) second = i;
  }
  int64_t uncertain = clocks[m.ranks[m.last].rank].residual_ns + clocks[m.ranks[second].rank].residual_ns;
  return std::max(options.min_lateness_ns, uncertain);
}

}  // namespace loupe::prof::job
