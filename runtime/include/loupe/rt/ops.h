// Operations on arrays.
//
// Every op takes the caller's source location as its last (defaulted)
// argument: shape and dtype errors name that line, and the memory an op
// allocates is attributed to it in the trace, also when the op runs inside
// a jitted function long after it was traced.
//
// Binary ops broadcast their operands numpy-style and require equal dtypes
// (cast with astype()); a plain number adopts the array operand's dtype.
#pragma once

#include <source_location>
#include <type_traits>
#include <vector>

#include "loupe/rt/array.h"

namespace loupe::rt {

using Loc = std::source_location;

// An operand that is an array or a plain number.
class Operand {
 public:
  Operand(const Array& a) : array_(a) {}  // NOLINT: implicit on purpose
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Operand(T v) : scalar_(double(v)), is_scalar_(true) {}  // NOLINT
  bool is_scalar() const { return is_scalar_; }
  const Array& array() const { return array_; }
  double scalar() const { return scalar_; }

 private:
  Array array_;
  double scalar_ = 0;
  bool is_scalar_ = false;
};

// ---- Creation -------------------------------------------------------------
Array full(const Shape& shape, double value, Dtype dtype = f32, Device device = default_device(),
           Loc loc = Loc::current());
Array zeros(const Shape& shape, Dtype dtype = f32, Device device = default_device(), Loc loc = Loc::current());
Array ones(const Shape& shape, Dtype dtype = f32, Device device = default_device(), Loc loc = Loc::current());
Array zeros_like(const Array& x, Loc loc = Loc::current());
Array ones_like(const Array& x, Loc loc = Loc::current());
// start, start+step, ... below stop.
Array arange(double start, double stop, double step = 1, Dtype dtype = i32, Device device = default_device(),
             Loc loc = Loc::current());

// ---- Elementwise ----------------------------------------------------------
Array neg(const Array& x, Loc loc = Loc::current());
Array exp(const Array& x, Loc loc = Loc::current());
Array log(const Array& x, Loc loc = Loc::current());
Array tanh(const Array& x, Loc loc = Loc::current());
Array sqrt(const Array& x, Loc loc = Loc::current());
Array rsqrt(const Array& x, Loc loc = Loc::current());
Array relu(const Array& x, Loc loc = Loc::current());
// The tanh approximation, as in GPT-2.
Array gelu(const Array& x, Loc loc = Loc::current());
Array sigmoid(const Array& x, Loc loc = Loc::current());
Array abs(const Array& x, Loc loc = Loc::current());
Array logical_not(const Array& x, Loc loc = Loc::current());

Array add(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array subtract(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array multiply(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array divide(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array power(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array maximum(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array minimum(const Operand& a, const Operand& b, Loc loc = Loc::current());
// Comparisons and logic return bool arrays.
Array equal(const Operand& a, const Operand& b, Loc loc = Loc::current());
// Preferred over std::equal, which argument-dependent lookup also finds
// when a std::source_location is passed.
Array equal(const Array& a, const Array& b, Loc loc = Loc::current());
Array not_equal(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array less(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array less_equal(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array greater(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array greater_equal(const Operand& a, const Operand& b, Loc loc = Loc::current());
Array logical_and(const Array& a, const Array& b, Loc loc = Loc::current());
Array logical_or(const Array& a, const Array& b, Loc loc = Loc::current());
// cond ? a : b, elementwise; cond is bool.
Array where(const Array& cond, const Operand& a, const Operand& b, Loc loc = Loc::current());
Array astype(const Array& x, Dtype dtype, Loc loc = Loc::current());
// The identity, through which no gradient flows.
Array stop_gradient(const Array& x, Loc loc = Loc::current());

// ---- Reductions (axes may be negative; empty means all axes) ------------
Array sum(const Array& x, std::vector<int> axes = {}, bool keepdims = false, Loc loc = Loc::current());
Array mean(const Array& x, std::vector<int> axes = {}, bool keepdims = false, Loc loc = Loc::current());
Array max(const Array& x, std::vector<int> axes = {}, bool keepdims = false, Loc loc = Loc::current());
Array min(const Array& x, std::vector<int> axes = {}, bool keepdims = false, Loc loc = Loc::current());
// Index of the first maximum along `axis`, as i32.
Array argmax(const Array& x, int axis = -1, bool keepdims = false, Loc loc = Loc::current());

// ---- Shapes -----------------------------------------------------------------
// One extent may be -1 (inferred).
Array reshape(const Array& x, Shape shape, Loc loc = Loc::current());
// Permutes axes; an empty permutation reverses them.
Array transpose(const Array& x, std::vector<int> perm = {}, Loc loc = Loc::current());
Array expand_dims(const Array& x, int axis, Loc loc = Loc::current());
Array squeeze(const Array& x, int axis, Loc loc = Loc::current());
// x[starts:stops:steps] along every axis; steps default to 1.
Array slice(const Array& x, std::vector<int64_t> starts, std::vector<int64_t> stops, std::vector<int64_t> steps = {},
            Loc loc = Loc::current());
Array concat(const std::vector<Array>& xs, int axis = 0, Loc loc = Loc::current());
Array broadcast_to(const Array& x, const Shape& shape, Loc loc = Loc::current());

// ---- Linear algebra and networks -------------------------------------------
// Batched matrix product over the last two axes; batch axes broadcast.
// A 1-D operand is a row (left) or column (right) vector.
Array matmul(const Array& a, const Array& b, Loc loc = Loc::current());
Array softmax(const Array& x, int axis = -1, Loc loc = Loc::current());
Array log_softmax(const Array& x, int axis = -1, Loc loc = Loc::current());
// Normalises over the last axis, then scales by gamma and shifts by beta
// (both of the last axis' extent).
Array layer_norm(const Array& x, const Array& gamma, const Array& beta, double eps = 1e-5, Loc loc = Loc::current());
// Rows of `table` (axis 0) picked by integer `indices`: shape
// indices.shape + table.shape[1:]. Out-of-range indices are clamped.
Array take(const Array& table, const Array& indices, Loc loc = Loc::current());
// 1.0 where the class equals the label, over a new last axis of `classes`.
Array one_hot(const Array& labels, int64_t classes, Dtype dtype = f32, Loc loc = Loc::current());
// Mean over the batch of -log softmax(logits)[label]; logits [N, C], labels
// integer [N].
Array cross_entropy(const Array& logits, const Array& labels, Loc loc = Loc::current());

enum class AttentionImpl : uint8_t {
  naive,  // materialises the [.., Sq, Sk] scores: memory quadratic in S
  fused,  // tiled online softmax: memory linear in S
};
// softmax(q kᵀ · scale [+ causal mask]) v over [..., S, D] operands (batch
// axes must match). scale 0 means 1/sqrt(D). The causal mask aligns the
// last query with the last key.
Array attention(const Array& q, const Array& k, const Array& v, bool causal = false,
                AttentionImpl impl = AttentionImpl::fused, double scale = 0, Loc loc = Loc::current());

// ---- Operators ---------------------------------------------------------------
// An array operand of an operator, with the line of the expression: an
// operator cannot take a defaulted source_location of its own.
struct At {
  At(const Array& a, Loc where = Loc::current()) : array(a), loc(where) {}  // NOLINT
  const Array& array;
  Loc loc;
};

inline Array operator+(At a, const Operand& b) { return add(a.array, b, a.loc); }
inline Array operator-(At a, const Operand& b) { return subtract(a.array, b, a.loc); }
inline Array operator*(At a, const Operand& b) { return multiply(a.array, b, a.loc); }
inline Array operator/(At a, const Operand& b) { return divide(a.array, b, a.loc); }
inline Array operator+(double a, At b) { return add(a, b.array, b.loc); }
inline Array operator-(double a, At b) { return subtract(a, b.array, b.loc); }
inline Array operator*(double a, At b) { return multiply(a, b.array, b.loc); }
inline Array operator/(double a, At b) { return divide(a, b.array, b.loc); }
inline Array operator-(At a) { return neg(a.array, a.loc); }
inline Array operator<(At a, const Operand& b) { return less(a.array, b, a.loc); }
inline Array operator<=(At a, const Operand& b) { return less_equal(a.array, b, a.loc); }
inline Array operator>(At a, const Operand& b) { return greater(a.array, b, a.loc); }
inline Array operator>=(At a, const Operand& b) { return greater_equal(a.array, b, a.loc); }

}  // namespace loupe::rt
