#include <fmt/format.h>

#include "import/mappings.h"

namespace loupe::prof::import {

bool is_nsys_export(const std::string&) { return false; }

void read_nsys(const std::string& path, TraceWriter&, ImportedTrace&) {
  throw ImportError(fmt::format("{}: nsys import is not built yet", path));
}

}  // namespace loupe::prof::import
