// The primitive operations of the IR. Public ops (ops.h) are built from
// these; every primitive has shape inference (shape_inference.cpp), a
// differentiation rule (autodiff/vjp_rules.cpp) and a kernel lowering
// (compile/lower.cpp).
#pragma once

#include <cstdint>
#include <string_view>

namespace loupe::rt::ir {

// Every primitive, once, with its class: how the compiler groups it.
//   source       an input or a constant: no kernel of its own
//   elementwise  one value out per index (full, iota and the random ops
//                are elementwise sources)
//   reduction    over `axes`
//   view         a view of its operand (reshape aliases its buffer)
//   opaque       a kernel of its own
// The ops come in groups, so that a switch can name a whole group at once
// (`LOUPE_VIEW_OPS(LOUPE_OP_CASE)`) and still have no `default:`: a new op
// goes into its group here, and every switch that names the group gets it.
#define LOUPE_SOURCE_OPS(X)                                  \
  X(parameter, source) /* an input of the traced function */ \
  X(constant, source)  /* a concrete array captured by the trace */
// Elementwise ops that make their values from attributes (and a key), not
// from array operands.
#define LOUPE_GENERATOR_OPS(X)                                                         \
  X(full, elementwise)        /* every element `value` */                              \
  X(iota, elementwise)        /* the index along `axis` */                             \
  X(random_bits, elementwise) /* counter-based, from a key operand, as the next two */ \
  X(random_uniform, elementwise)                                                       \
  X(random_normal, elementwise)
#define LOUPE_UNARY_OPS(X)    \
  X(neg, elementwise)         \
  X(exp, elementwise)         \
  X(log, elementwise)         \
  X(tanh, elementwise)        \
  X(sqrt, elementwise)        \
  X(rsqrt, elementwise)       \
  X(relu, elementwise)        \
  X(gelu, elementwise)        \
  X(sigmoid, elementwise)     \
  X(abs, elementwise)         \
  X(logical_not, elementwise) \
  X(cast, elementwise)        \
  X(stop_gradient, elementwise)
// Binary ops take operands of equal shape and dtype.
#define LOUPE_ARITHMETIC_OPS(X) \
  X(add, elementwise)           \
  X(sub, elementwise)           \
  X(mul, elementwise)           \
  X(div, elementwise)           \
  X(pow, elementwise)           \
  X(maximum, elementwise)       \
  X(minimum, elementwise)
#define LOUPE_COMPARISON_OPS(X) \
  X(eq, elementwise)            \
  X(ne, elementwise)            \
  X(lt, elementwise)            \
  X(le, elementwise)            \
  X(gt, elementwise)            \
  X(ge, elementwise)
#define LOUPE_LOGICAL_OPS(X) X(logical_and, elementwise) X(logical_or, elementwise)
#define LOUPE_TERNARY_OPS(X) X(where, elementwise)
#define LOUPE_ELEMENTWISE_OPS(X) \
  LOUPE_GENERATOR_OPS(X)         \
  LOUPE_UNARY_OPS(X)             \
  LOUPE_ARITHMETIC_OPS(X)        \
  LOUPE_COMPARISON_OPS(X)        \
  LOUPE_LOGICAL_OPS(X)           \
  LOUPE_TERNARY_OPS(X)
// Reductions over `axes`.
#define LOUPE_REDUCTION_OPS(X) \
  X(reduce_sum, reduction) X(reduce_max, reduction) X(reduce_min, reduction) X(argmax, reduction)
// Layout: views of their operand.
#define LOUPE_VIEW_OPS(X) X(reshape, view) X(transpose, view) X(broadcast_to, view) X(slice, view)
// Kernels of their own.
#define LOUPE_OPAQUE_OPS(X)                                                                      \
  X(pad, opaque) /* inverse of slice: the operand placed at starts + i*steps, zeros elsewhere */ \
  X(concat, opaque)                                                                              \
  X(matmul, opaque)                                                                              \
  X(gather, opaque)      /* rows of operand 0 picked by operand 1 */                             \
  X(scatter_add, opaque) /* zeros of `shape` plus operand 1 added at rows operand 0 */           \
  X(attention, opaque)                                                                           \
  X(attention_bwd, opaque) /* d(q), d(k), d(v) packed in one flat array */
// Every op, group by group, each group through the macro given for it:
// LOUPE_OPS passes one macro to all, and the lists of the ops outside one
// group (below) pass LOUPE_OP_NONE for that group.
#define LOUPE_OPS_BY_GROUP(SOURCE, GENERATOR, UNARY, ARITHMETIC, COMPARISON, LOGICAL, TERNARY, REDUCTION, VIEW, \
                           OPAQUE)                                                                              \
  LOUPE_SOURCE_OPS(SOURCE)                                                                                      \
  LOUPE_GENERATOR_OPS(GENERATOR)                                                                                \
  LOUPE_UNARY_OPS(UNARY)                                                                                        \
  LOUPE_ARITHMETIC_OPS(ARITHMETIC)                                                                              \
  LOUPE_COMPARISON_OPS(COMPARISON)                                                                              \
  LOUPE_LOGICAL_OPS(LOGICAL)                                                                                    \
  LOUPE_TERNARY_OPS(TERNARY)                                                                                    \
  LOUPE_REDUCTION_OPS(REDUCTION)                                                                                \
  LOUPE_VIEW_OPS(VIEW)                                                                                          \
  LOUPE_OPAQUE_OPS(OPAQUE)
#define LOUPE_OP_NONE(op, cls)
#define LOUPE_OPS(X) LOUPE_OPS_BY_GROUP(X, X, X, X, X, X, X, X, X, X)
// The ops outside one group: a function given only that group's ops
// switches over them naming the others with these, as it has no `default:`
// either.
#define LOUPE_OPS_BUT_GENERATOR(X) LOUPE_OPS_BY_GROUP(X, LOUPE_OP_NONE, X, X, X, X, X, X, X, X)
#define LOUPE_OPS_BUT_UNARY(X) LOUPE_OPS_BY_GROUP(X, X, LOUPE_OP_NONE, X, X, X, X, X, X, X)
#define LOUPE_OPS_BUT_ARITHMETIC(X) LOUPE_OPS_BY_GROUP(X, X, X, LOUPE_OP_NONE, X, X, X, X, X, X)
#define LOUPE_OPS_BUT_COMPARISON(X) LOUPE_OPS_BY_GROUP(X, X, X, X, LOUPE_OP_NONE, X, X, X, X, X)
#define LOUPE_OPS_BUT_REDUCTION(X) LOUPE_OPS_BY_GROUP(X, X, X, X, X, X, X, LOUPE_OP_NONE, X, X)
#define LOUPE_OPS_BUT_VIEW(X) LOUPE_OPS_BY_GROUP(X, X, X, X, X, X, X, X, LOUPE_OP_NONE, X)
#define LOUPE_OPS_BUT_OPAQUE(X) LOUPE_OPS_BY_GROUP(X, X, X, X, X, X, X, X, X, LOUPE_OP_NONE)
// The case labels of a group, for a switch over Op.
#define LOUPE_OP_CASE(op, cls) case Op::op:

enum class Op : uint8_t {
#define LOUPE_OP_ENUMERATOR(op, cls) op,
  LOUPE_OPS(LOUPE_OP_ENUMERATOR)
#undef LOUPE_OP_ENUMERATOR
};

#define LOUPE_OP_ONE(op, cls) +1
inline constexpr int kOpCount = 0 LOUPE_OPS(LOUPE_OP_ONE);
#undef LOUPE_OP_ONE

std::string_view op_name(Op op);

enum class OpClass : uint8_t { source, elementwise, reduction, view, opaque };
OpClass op_class(Op op);

inline bool is_elementwise(Op op) { return op_class(op) == OpClass::elementwise; }
inline bool is_reduction(Op op) { return op_class(op) == OpClass::reduction; }
inline bool is_view(Op op) { return op_class(op) == OpClass::view; }
inline bool is_random(Op op) { return op == Op::random_bits || op == Op::random_uniform || op == Op::random_normal; }

}  // namespace loupe::rt::ir
