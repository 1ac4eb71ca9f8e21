// Files people try to open that are not traces loupe reads, each with
// what it is and what to do instead: an Nsight Systems report before its
// export, a Perfetto protobuf trace, a program. Recognised by name and
// first bytes, before any importer parses them as JSON.
#pragma once

#include <string>

namespace loupe::prof::open {

// Throws InputError naming what `path` is and what to do, when its name
// or its first bytes (`head`) say it is one of those files.
void refuse_known_non_trace(const std::string& path, const std::string& head);

}  // namespace loupe::prof::open
