// loupe._core's recording half: a capture of the Python process and the
// events its framework hooks report (recording.cpp).
#pragma once

#include <nanobind/nanobind.h>

namespace loupe::python {

void add_recording(nanobind::module_& m);

}  // namespace loupe::python
