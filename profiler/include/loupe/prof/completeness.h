// Whether a trace holds all the events the analyses that read the device's
// work need (docs/analyses.md, "Completeness"). A trace sampled or cut
// after recording, a recorder that dropped events, CUDA graph replays whose
// kernels are not recorded: each leaves device idle that did not happen,
// and a verdict on it would be wrong.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loupe/prof/trace_model.h"

namespace loupe::prof {

// One thing the trace lacks: what is missing, and which figures that
// leaves untrusted.
struct Incompleteness {
  std::string missing;
  std::string untrusted;
  // Both, as every report words them.
  std::string text() const { return missing + "; cannot be trusted: " + untrusted; }
};

// The host ops a trace's source numbered one by one (Kineto's External
// id) that the trace holds, from its meta; nullopt when the source numbers
// none. A complete trace holds nearly all; under half is a trace sampled
// or cut after recording.
struct HostOpNumbering {
  int64_t held = 0, numbered = 0;
  double share() const { return numbered > 0 ? double(held) / double(numbered) : 1.0; }
  bool sparse() const { return share() < 0.5; }
};
std::optional<HostOpNumbering> host_op_numbering(const std::map<std::string, std::string>& meta);

// What the trace's metadata alone says is missing: events the recorder
// dropped or could not write, host ops numbered but absent. `loupe info`
// shows these; analyze() adds what only the events show (graph replays).
std::vector<Incompleteness> incomplete_by_meta(const TraceInfo& info);

}  // namespace loupe::prof
