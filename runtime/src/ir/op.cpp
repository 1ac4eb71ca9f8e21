#include "ir/op.h"

namespace loupe::rt::ir {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::parameter: return "parameter";
    case Op::constant: return "constant";
    case Op::full: return "full";
    case Op::iota: return "iota";
    case Op::random_bits: return "random_bits";
    case Op::random_uniform: return "random_uniform";
    case Op::random_normal: return "random_normal";
    case Op::neg: return "neg";
    case Op::exp: return "exp";
    case Op::log: return "log";
    case Op::tanh: return "tanh";
    case Op::sqrt: return "sqrt";
    case Op::rsqrt: return "rsqrt";
    case Op::relu: return "relu";
    case Op::gelu: return "gelu";
    case Op::sigmoid: return "sigmoid";
    case Op::abs: return "abs";
    case Op::logical_not: return "logical_not";
    case Op::cast: return "cast";
    case Op::stop_gradient: return "stop_gradient";
    case Op::add: return "add";
    case Op::sub: return "sub";
    case Op::mul: return "mul";
    case Op::div: return "div";
    case Op::pow: return "pow";
    case Op::maximum: return "maximum";
    case Op::minimum: return "minimum";
    case Op::eq: return "eq";
    case Op::ne: return "ne";
    case Op::lt: return "lt";
    case Op::le: return "le";
    case Op::gt: return "gt";
    case Op::ge: return "ge";
    case Op::logical_and: return "logical_and";
    case Op::logical_or: return "logical_or";
    case Op::where: return "where";
    case Op::reduce_sum: return "reduce_sum";
    case Op::reduce_max: return "reduce_max";
    case Op::reduce_min: return "reduce_min";
    case Op::argmax: return "argmax";
    case Op::reshape: return "reshape";
    case Op::transpose: return "transpose";
    case Op::broadcast_to: return "broadcast_to";
    case Op::slice: return "slice";
    case Op::pad: return "pad";
    case Op::concat: return "concat";
    case Op::matmul: return "matmul";
    case Op::gather: return "gather";
    case Op::scatter_add: return "scatter_add";
    case Op::attention: return "attention";
    case Op::attention_bwd: return "attention_bwd";
  }
  return "?";
}

OpClass op_class(Op op) {
  if (op <= Op::constant) return OpClass::source;
  if (op <= Op::where) return OpClass::elementwise;  // full, iota and random are elementwise sources
  if (op <= Op::argmax) return OpClass::reduction;
  if (op <= Op::slice) return OpClass::view;
  return OpClass::opaque;
}

}  // namespace loupe::rt::ir
