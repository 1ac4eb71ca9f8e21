#include "import/mappings.h"

namespace loupe::prof::import {

void map_jax(ChromeTrace& raw, TraceWriter& strings, ImportedTrace& out) { map_chrome(raw, strings, out); }

}  // namespace loupe::prof::import
