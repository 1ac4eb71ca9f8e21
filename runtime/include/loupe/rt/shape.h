// Shapes: the extent of each axis, outermost first. Arrays are always
// stored contiguously in row-major order, so a shape is all a kernel needs
// to address an array.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loupe/rt/dtype.h"

namespace loupe::rt {

using Shape = std::vector<int64_t>;

// Number of elements (1 for a scalar, shape {}).
int64_t numel(const Shape& shape);
// "[256,784]".
std::string shape_str(const Shape& shape);
// "f32[256,784]": how signatures, errors and the IR print an array type.
std::string type_str(Dtype dtype, const Shape& shape);
// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace loupe::rt
