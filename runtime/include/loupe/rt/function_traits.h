// The parameter list of a callable, so that jit() and grad() can offer a
// call operator with the same parameters plus a defaulted source location.
#pragma once

#include <type_traits>

namespace loupe::rt::detail {

template <typename F>
struct FunctionTraits : FunctionTraits<decltype(&std::decay_t<F>::operator())> {};

template <typename R, typename... A>
struct FunctionTraits<R (*)(A...)> {
  using Signature = R(std::decay_t<A>...);
};
template <typename R, typename... A>
struct FunctionTraits<R(A...)> {
  using Signature = R(std::decay_t<A>...);
};
template <typename C, typename R, typename... A>
struct FunctionTraits<R (C::*)(A...) const> {
  using Signature = R(std::decay_t<A>...);
};
template <typename C, typename R, typename... A>
struct FunctionTraits<R (C::*)(A...)> {
  using Signature = R(std::decay_t<A>...);
};

template <typename F>
using SignatureOf = typename FunctionTraits<F>::Signature;

}  // namespace loupe::rt::detail
