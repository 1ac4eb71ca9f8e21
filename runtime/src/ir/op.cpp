#include "ir/op.h"

#include <iterator>

namespace loupe::rt::ir {

namespace {

#define LOUPE_OP_NAME(op, cls) std::string_view(#op),
constexpr std::string_view kNames[] = {LOUPE_OPS(LOUPE_OP_NAME)};
#undef LOUPE_OP_NAME

#define LOUPE_OP_CLASS(op, cls) OpClass::cls,
constexpr OpClass kClasses[] = {LOUPE_OPS(LOUPE_OP_CLASS)};
#undef LOUPE_OP_CLASS

static_assert(std::size(kNames) == size_t(kOpCount) && std::size(kClasses) == size_t(kOpCount));

}  // namespace

std::string_view op_name(Op op) { return size_t(op) < std::size(kNames) ? kNames[size_t(op)] : "?"; }

OpClass op_class(Op op) { return kClasses[size_t(op)]; }

}  // namespace loupe::rt::ir
