#include "analysis/host_speed.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// Ops that describe a tensor without touching its data, and their median
// duration in a typical profiled run: the medians PyTorch's profiler
// recorded on current server hosts (h100_owlv2_infer, h100_qwen_infer,
// b200_vllm_tp8, mi300x_vllm_decode_full_graph, a100_torchrec_cudagraph;
// docs/analyses.md lists them), rounded up, never under 1 us, since older
// Kineto writes whole microseconds.
struct Bookkeeping {
  std::string_view name;
  int64_t typical_ns;
};
constexpr std::array<Bookkeeping, 10> kBookkeeping = {{
    {"aten::view", 1'000},
    {"aten::as_strided", 1'000},
    {"aten::slice", 2'000},
    {"aten::select", 2'000},
    {"aten::reshape", 2'000},
    {"aten::detach", 2'000},
    {"aten::transpose", 2'500},
    {"aten::empty", 3'000},
    {"aten::t", 5'000},
    {"aten::empty_strided", 5'000},
}};
constexpr size_t kMinCalls = 20;
constexpr size_t kMinOps = 3;

// Durations of each bookkeeping op's calls, over every thread.
std::array<std::vector<int64_t>, kBookkeeping.size()> durations_of(const TraceModel& model) {
  std::vector<int> op_of_string(model.strings.size(), -1);
  for (size_t s = 0; s < model.strings.size(); ++s) {
    for (size_t k = 0; k < kBookkeeping.size(); ++k) {
      if (model.strings[s] == kBookkeeping[k].name) op_of_string[s] = int(k);
    }
  }
  std::array<std::vector<int64_t>, kBookkeeping.size()> out;
  for (const HostSpans& t : model.host_spans) {
    for (size_t i = 0; i < t.size(); ++i) {
      const int k = op_of_string[t.name[i]];
      if (k >= 0) out[size_t(k)].push_back(t.dur[i]);
    }
  }
  return out;
}

int64_t median_of(std::vector<int64_t>& v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + long(mid), v.end());
  const int64_t upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + long(mid)) + upper) / 2;
}

}  // namespace

HostSpeed host_speed(const TraceModel& model) {
  HostSpeed speed;
  std::vector<double> ratios;
  auto durations = durations_of(model);
  for (size_t k = 0; k < kBookkeeping.size(); ++k) {
    std::vector<int64_t>& d = durations[k];
    if (d.size() < kMinCalls) continue;
    const int64_t median = median_of(d);
    ratios.push_back(double(median) / double(kBookkeeping[k].typical_ns));
    speed.ops += 1;
    speed.calls += d.size();
    speed.detail += fmt::format("{}{} median {} (typical {})", speed.detail.empty() ? "" : ", ", kBookkeeping[k].name,
                                format_duration(median), format_duration(kBookkeeping[k].typical_ns));
  }
  if (speed.ops < kMinOps) return speed;
  speed.judged = true;
  std::sort(ratios.begin(), ratios.end());
  const size_t mid = ratios.size() / 2;
  speed.slowdown = ratios.size() % 2 == 1 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
  return speed;
}

}  // namespace loupe::prof::analysis
