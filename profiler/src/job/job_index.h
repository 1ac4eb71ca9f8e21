// What the job layer's files share about the index: its text, read by the
// reader's rules and written, and what it says is missing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loupe/prof/job.h"

namespace loupe::prof {

// DIR/job.json.
std::string index_path(const std::string& dir);

// The text of DIR/job.json, read through loupe's input gate (a regular
// file, at most 1 GiB). Throws JobError.
std::string read_index_text(const std::string& dir);

// The index's text as read_job reads it: parsed and checked (bounds,
// ranks, names), but not against the files it names (check_traces does
// that). Throws JobError naming `dir`'s index.
Job parse_job_index(const std::string& text, const std::string& dir);

// Each rank's trace is a regular file in the folder (not a link, FIFO or
// device), and no two ranks name one file. Throws JobError.
void check_traces(const Job& job);

// The index's text for `job`, keys in the order docs/trace-format.md
// gives them.
std::string job_index_text(const Job& job);

// The ranks below job.world_size that have no trace, in order.
std::vector<int64_t> missing_ranks(const Job& job);

}  // namespace loupe::prof
