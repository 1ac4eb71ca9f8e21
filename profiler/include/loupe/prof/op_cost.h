// What a framework op computes and moves, from its name and its inputs'
// shapes and types as PyTorch's profiler records them (record_shapes=True:
// `Input Dims`, `Input type`, `Concrete Inputs`). docs/analyses.md ("FLOPs
// and bytes") gives every formula and its source. Matmuls, convolutions
// and attention are counted exactly as torch.utils.flop_counter counts
// them (a multiply-add is two FLOPs), so a trace's FLOPs equal PyTorch's
// own count op for op; normalisation, softmax and elementwise ops, which
// that counter leaves out, as DeepSpeed's flops profiler counts them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loupe::prof {

// The kinds of op a roofline is drawn for.
enum class OpClass : uint8_t {
  matmul = 0,
  convolution = 1,
  attention = 2,
  normalization = 3,
  softmax = 4,
  elementwise = 5
};
inline constexpr size_t kOpClasses = 6;
std::string_view name_of(OpClass c);

// The element type an op computes in, as far as peaks tell them apart.
enum class DType : uint8_t { unknown = 0, fp64 = 1, fp32 = 2, bf16 = 3, fp16 = 4, fp8 = 5, int8 = 6, other = 7 };
std::string_view name_of(DType t);
// PyTorch's name of a tensor's type ("float", "c10::BFloat16", "c10::Half",
// "c10::Float8_e4m3fn", "long int", ...): DType::unknown for "", "Scalar"
// and the other non-tensor inputs.
DType dtype_of(std::string_view torch_type);
// Bytes per element; 0 for unknown and other.
int64_t element_bytes(DType t);

// An op's inputs, one entry per argument, as the profiler records them.
struct OpInputs {
  std::vector<std::vector<int64_t>> dims;  // `Input Dims`: a tensor's shape; [] for anything else
  std::vector<std::string> types;          // `Input type`
  std::vector<std::string> concrete;       // `Concrete Inputs`: scalars and lists as text ("[2, 2]", "False")
};

struct OpCost {
  OpClass op_class = OpClass::elementwise;
  DType dtype = DType::unknown;  // the first floating-point tensor input's
  int64_t flops = 0;
  // Every tensor input read once and the output written once: the least
  // traffic the op can cause, which puts it on a roofline.
  int64_t bytes = 0;
};

// The op's cost; nullopt where no formula covers the op or its inputs do
// not fit the formula (its cost cannot be told). Composite ops that
// PyTorch records around the op that does the work (aten::linear,
// aten::matmul around aten::addmm, aten::mm or aten::bmm) have no formula
// of their own: counting them too would count the work twice.
std::optional<OpCost> op_cost(std::string_view name, const OpInputs& inputs);

}  // namespace loupe::prof
