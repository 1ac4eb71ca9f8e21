// FLOPs and bytes of framework ops (op_cost.h). On real PyTorch programs
// run here on the CPU, profiled with record_shapes=True: the FLOPs of
// every op PyTorch's own counter (torch.utils.flop_counter.FlopCounterMode)
// counts equal its count, op for op (tests/fixtures/kineto/
// record_cpu_flops_step.py recorded both, from the same step); and the
// MLP training loop of cpu_mlp_train.json.gz, whose matmuls are worked
// out by hand. Elsewhere, hand-computed cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "cost/kineto_json.h"
#include "loupe/prof/op_cost.h"

namespace {

using loupe::prof::DType;
using loupe::prof::op_cost;
using loupe::prof::OpClass;
using loupe::prof::OpCost;
using loupe::prof::OpInputs;
using nlohmann::json;

struct Op {
  std::string name;
  int64_t tid = 0;
  double start = 0, end = 0;
  OpInputs inputs;
};

std::vector<Op> ops_with_shapes(const json& trace) {
  std::vector<Op> out;
  for (const json& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "cpu_op" || !e.contains("args")) continue;
    const json& a = e["args"];
    if (!a.contains("Input Dims")) continue;
    Op op{e["name"], e["tid"].is_number() ? e["tid"].get<int64_t>() : 0, e["ts"], 0, {}};
    op.end = op.start + e["dur"].get<double>();
    for (const json& d : a["Input Dims"]) op.inputs.dims.push_back(d.get<std::vector<int64_t>>());
    for (const json& t : a["Input type"]) op.inputs.types.push_back(t.get<std::string>());
    if (a.contains("Concrete Inputs")) {
      for (const json& c : a["Concrete Inputs"]) op.inputs.concrete.push_back(c.get<std::string>());
    }
    out.push_back(std::move(op));
  }
  std::sort(out.begin(), out.end(), [](const Op& a, const Op& b) {
    return a.tid != b.tid ? a.tid < b.tid : a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  return out;
}

// FLOPs by op name, each op counted once: an op inside one already
// counted on its thread (aten::_convolution inside aten::convolution) is
// the same work.
std::map<std::string, int64_t> flops_by_op(const std::vector<Op>& ops, double from = -1e300, double to = 1e300) {
  std::map<std::string, int64_t> out;
  int64_t tid = -1;
  double counted_until = -1e300;
  for (const Op& op : ops) {
    if (op.tid != tid) counted_until = -1e300;
    tid = op.tid;
    if (op.start < from || op.start >= to || op.start < counted_until) continue;
    if (std::optional<OpCost> c = op_cost(op.name, op.inputs)) {
      out[op.name] += c->flops;
      counted_until = op.end;
    }
  }
  return out;
}

TEST(OpCost, EqualsPyTorchsOwnCounterOpForOpOnARealTrainingStep) {
  json reference = loupe::test::read_gzipped_json(std::string(LOUPE_REPO_FIXTURES_DIR) + "/cpu_flops_step.flops.json");
  std::map<std::string, int64_t> ours = flops_by_op(ops_with_shapes(
      loupe::test::read_gzipped_json(std::string(LOUPE_REPO_FIXTURES_DIR) + "/cpu_flops_step.json.gz")));
  const json& torch = reference["flops_by_op"];
  ASSERT_GE(torch.size(), 7u);  // mm, addmm, bmm, convolution and its backward, attention and its backward
  for (const auto& [op, flops] : torch.items()) EXPECT_EQ(ours[op], flops.get<int64_t>()) << op;
}

// The MLP of record_cpu_mlp_train.py, batch 256: Linear(512, 1024), ReLU,
// Linear(1024, 10). A step's forward is two addmm; its backward three mm
// (the weights' two gradients and the hidden layer's input gradient; the
// batch needs none).
TEST(OpCost, MatmulsOfEachStepOfARealTrainingLoopAreWorkedOutByHand) {
  json trace = loupe::test::read_gzipped_json(std::string(LOUPE_REPO_FIXTURES_DIR) + "/cpu_mlp_train.json.gz");
  std::vector<Op> ops = ops_with_shapes(trace);
  const int64_t forward = 2 * 256 * 512 * 1024 + 2 * 256 * 1024 * 10;
  const int64_t backward = 2 * 1024 * 256 * 512 + 2 * 10 * 256 * 1024 + 2 * 256 * 10 * 1024;
  int steps = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e.value("name", "").rfind("ProfilerStep#", 0) != 0) continue;
    double start = e["ts"], end = start + e["dur"].get<double>();
    std::map<std::string, int64_t> f = flops_by_op(ops, start, end);
    EXPECT_EQ(f["aten::addmm"], forward) << e["name"];
    EXPECT_EQ(f["aten::mm"], backward) << e["name"];
    ++steps;
  }
  EXPECT_EQ(steps, 5);
}

OpInputs inputs(std::vector<std::vector<int64_t>> dims, std::vector<std::string> types,
                std::vector<std::string> concrete = {}) {
  concrete.resize(dims.size());
  return {std::move(dims), std::move(types), std::move(concrete)};
}

TEST(OpCost, BytesAreEachInputReadOnceAndTheOutputWrittenOnce) {
  // bf16 [4096, 4096] @ [4096, 8192]: 2 * 4096 * 4096 * 8192 FLOPs; bytes
  // (4096*4096 + 4096*8192 + 4096*8192) * 2.
  std::optional<OpCost> mm =
      op_cost("aten::mm", inputs({{4096, 4096}, {4096, 8192}}, {"c10::BFloat16", "c10::BFloat16"}));
  ASSERT_TRUE(mm);
  EXPECT_EQ(mm->op_class, OpClass::matmul);
  EXPECT_EQ(mm->dtype, DType::bf16);
  EXPECT_EQ(mm->flops, int64_t(2) * 4096 * 4096 * 8192);
  EXPECT_EQ(mm->bytes, (int64_t(4096) * 4096 + 2 * int64_t(4096) * 8192) * 2);

  // Layer norm over fp16 [8, 1024, 768] with its weight and bias: 5 FLOPs
  // an element; the input, weight and bias read, the output written.
  std::optional<OpCost> ln = op_cost(
      "aten::native_layer_norm",
      inputs({{8, 1024, 768}, {}, {768}, {768}, {}}, {"c10::Half", "ScalarList", "c10::Half", "c10::Half", "Scalar"}));
  ASSERT_TRUE(ln);
  EXPECT_EQ(ln->op_class, OpClass::normalization);
  EXPECT_EQ(ln->flops, int64_t(5) * 8 * 1024 * 768);
  EXPECT_EQ(ln->bytes, (int64_t(2) * 8 * 1024 * 768 + int64_t(2) * 768) * 2);

  // A broadcast add, fp32 [32, 1, 64] + [128, 64]: the output is [32, 128, 64].
  std::optional<OpCost> add = op_cost("aten::add", inputs({{32, 1, 64}, {128, 64}, {}}, {"float", "float", "Scalar"}));
  ASSERT_TRUE(add);
  EXPECT_EQ(add->flops, 32 * 128 * 64);
  EXPECT_EQ(add->bytes, (32 * 64 + 128 * 64 + 32 * 128 * 64) * 4);
}

// Flash attention's own entry point takes [batch, sequence, heads, dim]:
// bf16, batch 2, 16 heads of 128, sequence 4096, GQA with 4 KV heads.
TEST(OpCost, AttentionInEitherLayoutAndWithGroupedHeads) {
  std::optional<OpCost> sdpa = op_cost("aten::_scaled_dot_product_flash_attention",
                                       inputs({{2, 16, 4096, 128}, {2, 4, 4096, 128}, {2, 4, 4096, 128}},
                                              {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"}));
  std::optional<OpCost> flash =
      op_cost("aten::_flash_attention_forward", inputs({{2, 4096, 16, 128}, {2, 4096, 4, 128}, {2, 4096, 4, 128}},
                                                       {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"}));
  ASSERT_TRUE(sdpa);
  ASSERT_TRUE(flash);
  const int64_t expected = 2 * (int64_t(2) * 2 * 16 * 4096 * 4096 * 128);  // QK^T and PV
  EXPECT_EQ(sdpa->flops, expected);
  EXPECT_EQ(flash->flops, expected);
  EXPECT_EQ(sdpa->op_class, OpClass::attention);
}

TEST(OpCost, WhatNoFormulaCoversIsUnknownNotZero) {
  EXPECT_FALSE(
      op_cost("aten::linear", inputs({{4, 8}, {16, 8}, {16}}, {"float", "float", "float"})));  // its addmm counts
  EXPECT_FALSE(op_cost("aten::embedding", inputs({{10, 4}, {3}}, {"float", "long int"})));
  EXPECT_FALSE(op_cost("aten::mm", inputs({{4, 8}, {9, 2}}, {"float", "float"})));  // inner sizes differ
  EXPECT_FALSE(op_cost("aten::mm", inputs({{4, 8}}, {"float"})));                   // an input missing
  EXPECT_FALSE(op_cost("aten::convolution", inputs({{1, 3, 8, 8}, {4, 3, 3, 3}, {}, {}, {}, {}, {}, {}, {}},
                                                   {"float", "float", "", "ScalarList", "ScalarList", "ScalarList",
                                                    "Scalar", "ScalarList", "Scalar"})));  // no stride recorded
  // A damaged trace's absurd shape saturates rather than overflows.
  std::optional<OpCost> huge =
      op_cost("aten::mm", inputs({{int64_t(1) << 40, int64_t(1) << 40}, {int64_t(1) << 40, 2}}, {"float", "float"}));
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->flops, int64_t(1) << 62);
}

}  // namespace
