// What the job layer's files share about the index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loupe/prof/job.h"

namespace loupe::prof {

// The most ranks a job may have: far beyond any real job, low enough that
// a forged index cannot make a reader allocate without bound.
inline constexpr int64_t kMaxJobRanks = int64_t(1) << 20;

// The ranks below job.world_size that have no trace, in order.
std::vector<int64_t> missing_ranks(const Job& job);

// Makes `dir` ready to take a job: creates it if needed, else it must be
// empty or hold a job. Throws JobError.
void prepare_folder(const std::string& dir);

// Removes the traces of the job `dir` holds, if any (before a new job
// takes the folder).
void remove_previous_job(const std::string& dir);

// Writes job.dir/job.json (replacing it at once, never half-written).
// Throws FileError.
void write_job_index(const Job& job);

}  // namespace loupe::prof
