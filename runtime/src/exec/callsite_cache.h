// Call-site ids for source locations, cached per thread: the record API's
// callsite() takes a lock and formats a key, too slow for every eager op.
#pragma once

#include <source_location>

#include "loupe/prof/record.h"

namespace loupe::rt::exec {

prof::CallSiteId site_of(const std::source_location& loc);

}  // namespace loupe::rt::exec
