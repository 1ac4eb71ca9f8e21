// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay. Its
// update is ordinary array code, so inside jit it fuses into one kernel per
// parameter.
#pragma once

#include <source_location>
#include <utility>
#include <vector>

#include "loupe/rt/ops.h"
#include "loupe/rt/tree.h"

namespace loupe::rt {

struct AdamW {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

// First and second moments per parameter, and the step count (an f32
// scalar array, so that a jitted step does not recompile as it grows).
struct AdamWState {
  std::vector<Array> m, v;
  Array step;
  auto tree_fields() { return std::tie(m, v, step); }
};

namespace detail {
AdamWState adamw_init_flat(const std::vector<Array>& params, const std::source_location& loc);
std::pair<std::vector<Array>, AdamWState> adamw_update_flat(const AdamW& opt, const std::vector<Array>& params,
                                                            const std::vector<Array>& grads, const AdamWState& state,
                                                            const std::source_location& loc);
}  // namespace detail

template <typename Params>
AdamWState adamw_init(const Params& params, std::source_location loc = std::source_location::current()) {
  tree::Flat flat;
  tree::flatten(params, flat);
  return detail::adamw_init_flat(flat.arrays, loc);
}

// The new parameters (same tree as `params`) and state.
template <typename Params>
std::pair<Params, AdamWState> adamw_update(const AdamW& opt, const Params& params, const Params& grads,
                                           const AdamWState& state,
                                           std::source_location loc = std::source_location::current()) {
  tree::Flat p, g;
  tree::flatten(params, p);
  tree::flatten(grads, g);
  auto [updated, next_state] = detail::adamw_update_flat(opt, p.arrays, g.arrays, state, loc);
  size_t next = 0;
  return {tree::rebuild(params, updated, next), std::move(next_state)};
}

}  // namespace loupe::rt
