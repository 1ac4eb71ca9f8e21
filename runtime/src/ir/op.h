// The primitive operations of the IR. Public ops (ops.h) are built from
// these; every primitive has shape inference (shape_inference.cpp), a
// differentiation rule (autodiff/vjp_rules.cpp) and a kernel lowering
// (compile/lower.cpp).
#pragma once

#include <cstdint>
#include <string_view>

namespace loupe::rt::ir {

enum class Op : uint8_t {
  // Sources.
  parameter,  // an input of the traced function
  constant,   // a concrete array captured by the trace
  full,       // every element `value`
  iota,       // the index along `axis`
  random_bits, random_uniform, random_normal,  // counter-based, from a key operand
  // Elementwise unary.
  neg, exp, log, tanh, sqrt, rsqrt, relu, gelu, sigmoid, abs, logical_not, cast, stop_gradient,
  // Elementwise binary (operands of equal shape and dtype).
  add, sub, mul, div, pow, maximum, minimum,
  eq, ne, lt, le, gt, ge, logical_and, logical_or,
  // Elementwise ternary.
  where,
  // Reductions over `axes`.
  reduce_sum, reduce_max, reduce_min, argmax,
  // Layout: views of their operand (reshape aliases its buffer).
  reshape, transpose, broadcast_to, slice,
  // Kernels of their own.
  pad,          // inverse of slice: the operand placed at starts + i*steps, zeros elsewhere
  concat,
  matmul,
  gather,       // rows of operand 0 picked by operand 1
  scatter_add,  // zeros of `shape` plus operand 1 added at rows operand 0
  attention,
  attention_bwd,  // d(q), d(k), d(v) packed in one flat array
};

inline constexpr int kOpCount = int(Op::attention_bwd) + 1;

std::string_view op_name(Op op);

enum class OpClass : uint8_t { source, elementwise, reduction, view, opaque };
OpClass op_class(Op op);

inline bool is_elementwise(Op op) { return op_class(op) == OpClass::elementwise; }
inline bool is_reduction(Op op) { return op_class(op) == OpClass::reduction; }
inline bool is_view(Op op) { return op_class(op) == OpClass::view; }
inline bool is_random(Op op) { return op == Op::random_bits || op == Op::random_uniform || op == Op::random_normal; }

}  // namespace loupe::rt::ir
