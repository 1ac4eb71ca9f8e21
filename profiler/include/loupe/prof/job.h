// A job: one run of a program on many ranks (the processes of a
// torch.distributed or multi-process JAX run), kept as a folder of loupe
// trace files, one per rank, and an index, job.json, that says which file
// is which rank. docs/trace-format.md describes the folder and the index.
//
//   job/
//     job.json           the index
//     rank-00000.g1.db   rank 0's trace, written by the folder's first write
//     rank-00001.g1.db   ...
//
// A job is written as one unit: each write is a new generation whose
// traces take names no earlier one used, and its index replaces the old
// one in one rename, so that a reader sees the old job or the new one,
// never a mix, and a failed write leaves the old job as it was.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "loupe/prof/import.h"

namespace loupe::prof {

// Sources that cannot form one job, or a folder that is not a job. The
// message names the files and the problem.
class JobError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The index's file name in a job's folder, and its format's version.
inline constexpr const char* kJobIndexName = "job.json";
inline constexpr int kJobFormatVersion = 1;

// One rank's trace in a job's folder.
struct JobRank {
  int64_t rank = 0;
  std::string trace;    // the file's name in the folder: rank-00003.g1.db
  std::string source;   // the file it was imported from
  std::string host;     // "" when the source does not say
  uint64_t events = 0;  // event rows in its trace
};

// A source that did not become a rank, and why.
struct JobFailure {
  std::string source;
  std::string error;
};

struct Job {
  std::string dir;
  int64_t generation = 1;            // how many times the folder was written, this time included
  int64_t world_size = 0;            // the ranks the job ran on
  std::string backend;               // the sources' distributed backend (nccl, gloo), "" when unknown
  std::vector<JobRank> ranks;        // in rank order
  std::vector<int64_t> missing;      // ranks below world_size without a trace
  std::vector<JobFailure> failures;  // sources that could not be imported

  bool complete() const { return missing.empty() && failures.empty(); }
  // The path of a rank's trace.
  std::string trace_path(const JobRank& rank) const;
};

// The most ranks a job may have: far beyond any real job, low enough that
// a forged index or trace cannot make loupe allocate without bound.
inline constexpr int64_t kMaxJobRanks = int64_t(1) << 20;

// Whether `path` is meant as a job's folder: it holds job.json (read_job
// then says whether the index is a job's).
bool is_job(const std::string& path);

// Reads a job's index. Throws JobError naming the folder and the problem:
// no index, a malformed one, a rank listed twice or beyond the job's size,
// two ranks naming one trace, a rank's trace missing from the folder or
// not a regular file.
Job read_job(const std::string& dir);

// Whether the folder's index is no longer the one `job` was read from: a
// new job was written over it since (a reader that finds a trace gone
// reads the job again).
bool job_replaced(const Job& job);

// Ranks as a person reads them: "rank 3", "ranks 3, 5 and 9", "ranks
// 0-127, 130 and 131" (runs of three or more consecutive ranks as a
// range).
std::string ranks_label(const std::vector<int64_t>& ranks);

struct JobImportOptions {
  ImportFormat format = ImportFormat::auto_detect;
  unsigned workers = 0;  // sources imported at once: 0 = one per core
  // A source whose trace does not say its rank is the rank of its place in
  // `sources` (a JAX profile's hosts, in the order of their names: the
  // profile does not say each host's process index), not of its name.
  bool ranks_by_order = false;
};

// Imports one trace per rank into the folder `dir` and writes its index.
// `dir` is created if needed; it must be empty or hold a job loupe wrote,
// which the new one replaces as one unit. Each source is imported
// (import_trace), or copied if it is a loupe trace. Its rank comes from
// the trace (Kineto's distributedInfo, a loupe trace's meta.rank), else
// from its file name ("rank3.json", "trace_rank-12.json.gz"), or its
// place with options.ranks_by_order.
//
// Throws JobError, leaving the folder as it was, for sources that cannot
// form one job: two claiming the same rank, ranks of jobs of different
// sizes or backends, a source whose rank cannot be told or lies beyond
// kMaxJobRanks; and for a folder that cannot take a job (another loupe
// writing into it, files that are not a job's). A failed write (a full
// disk) throws FileError or StoreError, leaving the folder as it was. A
// source that cannot be read is a failure and ranks without a source are
// missing: the job is written with the ranks it has, and says what it
// lacks.
Job import_job(const std::vector<std::string>& sources, const std::string& dir, const JobImportOptions& options = {});

}  // namespace loupe::prof
