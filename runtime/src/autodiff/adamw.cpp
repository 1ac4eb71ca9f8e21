// AdamW with bias correction and decoupled weight decay.
#include "loupe/rt/optim.h"

#include <fmt/format.h>

#include "ir/graph.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::detail {

AdamWState adamw_init_flat(const std::vector<Array>& params, const std::source_location& loc) {
  AdamWState s;
  for (const Array& p : params) {
    s.m.push_back(zeros_like(p, loc));
    s.v.push_back(zeros_like(p, loc));
  }
  s.step = full({}, 0, Dtype::f32, params.empty() ? default_device() : params[0].device(), loc);
  return s;
}

std::pair<std::vector<Array>, AdamWState> adamw_update_flat(const AdamW& opt, const std::vector<Array>& params,
                                                            const std::vector<Array>& grads, const AdamWState& state,
                                                            const std::source_location& loc) {
  if (grads.size() != params.size() || state.m.size() != params.size() || state.v.size() != params.size())
    throw ShapeError(fmt::format("adamw_update at {}: {} parameters, {} gradients and {} moments do not match",
                                 ir::format_loc(loc), params.size(), grads.size(), state.m.size()));
  AdamWState next;
  next.step = add(state.step, 1.0, loc);
  Array bc1 = subtract(1.0, power(opt.beta1, next.step, loc), loc);
  Array bc2 = subtract(1.0, power(opt.beta2, next.step, loc), loc);
  std::vector<Array> updated;
  for (size_t i = 0; i < params.size(); ++i) {
    const Array& p = params[i];
    const Array& g = grads[i];
    Array m = add(multiply(state.m[i], opt.beta1, loc), multiply(g, 1 - opt.beta1, loc), loc);
    Array v = add(multiply(state.v[i], opt.beta2, loc), multiply(multiply(g, g, loc), 1 - opt.beta2, loc), loc);
    Array mhat = divide(m, astype(bc1, p.dtype(), loc), loc);
    Array vhat = divide(v, astype(bc2, p.dtype(), loc), loc);
    Array step = add(divide(mhat, add(sqrt(vhat, loc), opt.eps, loc), loc), multiply(p, opt.weight_decay, loc), loc);
    updated.push_back(subtract(p, multiply(step, opt.lr, loc), loc));
    next.m.push_back(m);
    next.v.push_back(v);
  }
  return {updated, next};
}

}  // namespace loupe::rt::detail
