// JAX profile folders, as jax.profiler.trace(LOG_DIR) leaves them:
//
//   LOG_DIR/plugins/profile/<run>/<host>.trace.json.gz   the trace viewer's JSON
//                                 <host>.xplane.pb       what XProf reads (and makes the JSON of)
//                                 perfetto_trace.json.gz (create_perfetto_trace=True)
//
// one <run> folder per trace, named by the time it began
// (2024_05_01_12_30_00), so the newest sorts last.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loupe::prof::open {

struct ProfileRun {
  std::string dir;                  // the run's folder
  std::vector<std::string> traces;  // the file loupe reads for each host, by host name
  std::vector<std::string> notes;   // which run was chosen among how many
};

// The newest run of the JAX profile folder `dir` (LOG_DIR, its
// plugins/profile, or one run's folder); nothing when `dir` is none of
// these. Throws InputError for a profile folder without a trace loupe
// reads, or one too large to list (more than 100,000 entries).
std::optional<ProfileRun> find_profile_run(const std::string& dir);

}  // namespace loupe::prof::open
