// grad and value_and_grad: reverse-mode differentiation of a function
// returning a scalar, with respect to its first argument (an Array or any
// tree of them, see tree.h).
//
//   auto vg = rt::value_and_grad([](std::vector<Array> params, Array x, Array y) { return loss(params, x, y); });
//   auto [loss, grads] = vg(params, x, y);   // grads has the shape of params
//
// Works eagerly (each forward and backward op is its own kernel) and inside
// jit (the forward and backward graphs become part of the compiled
// executable). Every op of ops.h is differentiable except comparisons,
// argmax, integer ops and random numbers, whose gradient is zero.
#pragma once

#include <functional>
#include <source_location>
#include <utility>
#include <vector>

#include "loupe/rt/function_traits.h"
#include "loupe/rt/tree.h"

namespace loupe::rt {

namespace detail {
// The value of f at `primals` and its gradient with respect to each.
std::pair<Array, std::vector<Array>> value_and_grad_flat(const std::function<Array(const std::vector<Array>&)>& f,
                                                         const std::vector<Array>& primals,
                                                         const std::source_location& loc);
}  // namespace detail

template <typename Sig>
class ValueAndGrad;

template <typename R, typename P0, typename... P>
class ValueAndGrad<R(P0, P...)> {
 public:
  explicit ValueAndGrad(std::function<R(P0, P...)> fn) : fn_(std::move(fn)) {}

  std::pair<Array, P0> operator()(const P0& x, const P&... rest,
                                  std::source_location loc = std::source_location::current()) const {
    tree::Flat flat;
    tree::flatten(x, flat);
    auto f = [&](const std::vector<Array>& tracers) -> Array {
      size_t next = 0;
      return fn_(tree::rebuild(x, tracers, next), rest...);
    };
    auto [value, grads] = detail::value_and_grad_flat(f, flat.arrays, loc);
    size_t next = 0;
    return {value, tree::rebuild(x, grads, next)};
  }

 private:
  std::function<R(P0, P...)> fn_;
};

template <typename Sig>
class Grad;

template <typename R, typename P0, typename... P>
class Grad<R(P0, P...)> {
 public:
  explicit Grad(std::function<R(P0, P...)> fn) : vg_(std::move(fn)) {}
  P0 operator()(const P0& x, const P&... rest, std::source_location loc = std::source_location::current()) const {
    return vg_(x, rest..., loc).second;
  }

 private:
  ValueAndGrad<R(P0, P...)> vg_;
};

template <typename F>
auto value_and_grad(F fn) {
  using Sig = detail::SignatureOf<F>;
  return ValueAndGrad<Sig>(std::function<Sig>(std::move(fn)));
}

template <typename F>
auto grad(F fn) {
  using Sig = detail::SignatureOf<F>;
  return Grad<Sig>(std::function<Sig>(std::move(fn)));
}

}  // namespace loupe::rt
