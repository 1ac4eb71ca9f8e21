// A synthetic job with known answers, for tests and benchmarks: a
// data-parallel training run on N ranks, one GPU each, whose traces hold
// exactly what a job's analysis must find. Every rank runs the same steps
// (a forward pass, a backward pass in buckets whose gradients are
// all-reduced as each bucket finishes, an optimizer step that waits for
// the last all-reduce); the generator plants:
//   - a clock error per rank: each rank's wall clock is off by its own
//     amount, and the analysis must recover the differences from the
//     collectives alone;
//   - a straggler: one rank's attention kernel runs `delay_ns` longer in
//     most steps, so it arrives last at every all-reduce of those steps
//     and the other ranks wait for it;
//   - exposed communication: the last all-reduce of a step has no compute
//     beside it.
// Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loupe/prof/job.h"

namespace loupe::prof {

struct JobSynthOptions {
  int64_t ranks = 8;
  uint64_t events = 100'000;  // event rows per rank, at least (whole steps are written)
  uint64_t seed = 1;
};

// What the generator planted: the answers a job's analysis must give.
struct PlantedJob {
  Job job;
  int64_t steps = 0;
  int64_t collectives_per_step = 0;  // all-reduces, one per gradient bucket
  int64_t bucket_bytes = 0;          // each all-reduce's message
  int64_t straggler = 0;             // the rank that is late
  std::vector<int64_t> late_steps;   // the step numbers in which it is late
  int64_t delay_ns = 0;              // how late it is at each collective of those steps
  int64_t transfer_ns = 0;           // each all-reduce's time once every rank has arrived
  int64_t compute_ns = 0;            // a rank's kernel time per step, without the delay
  // Each rank's wall-clock error minus rank 0's: what aligning the clocks
  // must recover.
  std::vector<int64_t> clock_offset_ns;
  uint64_t events_per_rank = 0;
};

// Writes the job into the folder `dir` (created if needed; it must be
// empty or hold a job, which is replaced). Throws JobError or StoreError.
PlantedJob write_synthetic_job(const std::string& dir, const JobSynthOptions& options);

}  // namespace loupe::prof
