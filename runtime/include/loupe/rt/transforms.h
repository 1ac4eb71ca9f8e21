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
#include <type_traits>
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

// What a differentiated function returns: its value with the gradient, or
// the gradient alone.
enum class GradOutput { value_and_grad, grad };

template <typename Sig, GradOutput kOutput>
class Differentiated;

template <GradOutput kOutput, typename R, typename P0, typename... P>
class Differentiated<R(P0, P...), kOutput> {
 public:
  using Result = std::conditional_t<kOutput == GradOutput::value_and_grad, std::pair<Array, P0>, P0>;

  explicit Differentiated(std::function<R(P0, P...)> fn) : fn_(std::move(fn)) {}

  Result operator()(const P0& x, const P&... rest, std::source_location loc = std::source_location::current()) const {
    tree::Flat flat;
    tree::flatten(x, flat);
    auto f = [&](const std::vector<Array>& tracers) -> Array {
      size_t next = 0;
      return fn_(tree::rebuild(x, tracers, next), rest...);
    };
    auto [value, grads] = detail::value_and_grad_flat(f, flat.arrays, loc);
    size_t next = 0;
    if constexpr (kOutput == GradOutput::grad) return tree::rebuild(x, grads, next);
    else return {value, tree::rebuild(x, grads, next)};
  }

 private:
  std::function<R(P0, P...)> fn_;
};

template <typename Sig>
using ValueAndGrad = Differentiated<Sig, GradOutput::value_and_grad>;
template <typename Sig>
using Grad = Differentiated<Sig, GradOutput::grad>;

namespace detail {
template <GradOutput kOutput, typename F>
auto differentiate(F fn) {
  using Sig = SignatureOf<F>;
  return Differentiated<Sig, kOutput>(std::function<Sig>(std::move(fn)));
}
}  // namespace detail

template <typename F>
auto value_and_grad(F fn) {
  return detail::differentiate<GradOutput::value_and_grad>(std::move(fn));
}

template <typename F>
auto grad(F fn) {
  return detail::differentiate<GradOutput::grad>(std::move(fn));
}

}  // namespace loupe::rt
