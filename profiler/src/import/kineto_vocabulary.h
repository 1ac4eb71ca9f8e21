// Kineto's vocabulary: the categories PyTorch's profiler writes, in one
// place for the Kineto mapping (what each event becomes) and for telling a
// Kineto trace from other Chrome JSON.
#pragma once

#include <cstdint>
#include <string_view>

namespace loupe::prof::import {

// What a Kineto event is, by its category.
enum class KinetoCat : uint8_t {
  other,
  cpu_op,
  user_annotation,
  python_function,
  runtime,
  kernel,
  memcpy,
  memset,
  sync,
  gpu_user_annotation,
  ac2g,
  overhead,
};

// The category of an event, from the spellings of every Kineto version
// (older ones capitalise: "Operator", "Kernel", "Memcpy").
KinetoCat kineto_category(std::string_view c);

// A category that only Kineto writes, in the spelling of today's Kineto:
// one event with it makes a trace a Kineto trace. (Older spellings such as
// "Kernel" are too generic to tell a Kineto trace by.)
bool is_kineto_marker(std::string_view c);

}  // namespace loupe::prof::import
