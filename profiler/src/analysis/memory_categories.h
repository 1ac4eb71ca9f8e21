// What a block of memory was for, told from the ops open when it was
// allocated and when it was freed (docs/analyses.md, "memory": categories).
// A trace without op ranges around its allocations tells nothing: unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "analysis/context.h"

namespace loupe::prof::analysis {

enum class BlockCategory : uint8_t {
  activation,       // allocated outside the backward and freed in it: saved for backward
  temporary,        // freed before the outermost op (or the optimizer step) that allocated it ended, or
                    // allocated and freed inside the backward
  gradient,         // allocated by AccumulateGrad, or in the backward and freed by it or zero_grad
  optimizer_state,  // allocated in Optimizer.step and kept past its end
  input,            // allocated while a DataLoader produced a batch
  unknown,          // no evidence of what it was for
};
inline constexpr size_t kBlockCategories = size_t(BlockCategory::unknown) + 1;

// `freed`: when the block was freed, if the trace shows it.
BlockCategory categorize(const Context& ctx, int64_t allocated, std::optional<int64_t> freed);

std::string_view category_name(BlockCategory c);
// The evidence a category rests on, as a finding states it.
std::string_view category_evidence(BlockCategory c);

}  // namespace loupe::prof::analysis
