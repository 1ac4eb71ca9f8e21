// Any input a reading command takes (analyze, summary, check, diff,
// export, info, the viewer, the Python API): a loupe trace, a job's folder,
// another profiler's trace file (the formats of import.h), or a JAX
// profile folder. A foreign trace is imported in memory, straight into
// the model the analyses read, and kept in a cache of imported traces, so
// that the next visit to the same content is a read of a loupe trace.
// docs/import.md, "Opening any trace", describes the rules.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "loupe/prof/import.h"
#include "loupe/prof/trace_model.h"

namespace loupe::prof {

// A path that is none of the inputs loupe reads; the message names what
// it looks like and what to do ("an Nsight Systems report (.nsys-rep):
// export it with `nsys export --type sqlite` first").
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class InputKind : uint8_t {
  loupe_trace,  // a loupe trace file
  job,          // a job's folder (job.h)
  foreign,      // a file of one of import.h's formats
  jax_profile,  // a JAX profile folder: plugins/profile/<run>/<host>.trace.json.gz
};

struct InputOptions {
  // Whether a foreign trace is looked up in, and added to, the cache.
  bool use_cache = true;
  std::string cache_dir;  // "" = default_cache_dir()
  // The cache's size cap in bytes: 0 = default_cache_max_bytes(). The
  // least recently used entries go first.
  uint64_t cache_max_bytes = 0;
  // Threads reading a loupe trace (ReadOptions::threads) and parsing a
  // foreign one (ImportOptions::threads): 0 = one per core, at most 4.
  unsigned threads = 0;
  ImportFormat format = ImportFormat::auto_detect;
};

// What a path is, looked at without reading it whole. `source` is the
// file to read: the path, or for a JAX profile folder its newest run's
// trace (or the run's folder when it holds several hosts' traces).
struct InputPlan {
  InputKind kind = InputKind::loupe_trace;
  std::string path;                  // as given
  std::string source;                // what is read
  std::vector<std::string> sources;  // a profile run's hosts' traces, one per host
  std::vector<std::string> notes;    // what a person should know ("2 runs; the newest, ..., is read")

  // Whether it opens as a job: a job's folder, or a profile run of
  // several hosts.
  bool is_job() const { return kind == InputKind::job || sources.size() > 1; }
};

// Throws InputError for a path loupe cannot read, naming what it is.
InputPlan plan_input(const std::string& path);

// An input opened: a job's folder to analyse as a job, or one trace's
// model. A foreign trace's model may still be written to the cache on a
// thread of its own; the destructor waits for it (wait_for_cache()).
class OpenedInput {
 public:
  OpenedInput() = default;
  OpenedInput(OpenedInput&&) = default;
  // Waits for this one's cache write first (a running thread is never
  // dropped).
  OpenedInput& operator=(OpenedInput&& other) noexcept;
  ~OpenedInput();

  InputPlan plan;
  std::string job_dir;                      // set for a job: its folder
  std::shared_ptr<const TraceModel> model;  // set for one trace
  bool from_cache = false;                  // the model was read from the cache

  bool is_job() const { return !job_dir.empty(); }
  // Waits for the cache's copy to be written; returns why it could not
  // be ("" when it was, or none was being written).
  std::string wait_for_cache();
  // The model, for a reader that keeps it as a value: moved out when no
  // cache write reads it any more, else copied. `model` is null after.
  TraceModel take_model();

 private:
  friend OpenedInput open_input(const std::string& path, const InputOptions& options);
  std::unique_ptr<std::thread> cache_writer_;
  std::shared_ptr<std::string> cache_error_;
  std::shared_ptr<const std::string> temporary_job_;  // removed with the last copy
};

// Opens `path` as plan_input() finds it. A foreign trace, or a profile
// folder's one host, becomes a model (from the cache, or imported in
// memory); several hosts become a job, imported into the cache (into a
// temporary folder without it, removed when the OpenedInput goes). Throws
// InputError, ImportError, TraceError or JobError naming the path.
OpenedInput open_input(const std::string& path, const InputOptions& options = {});

// $LOUPE_CACHE_DIR, else $XDG_CACHE_HOME/loupe/traces, else
// ~/.cache/loupe/traces.
std::string default_cache_dir();
// $LOUPE_CACHE_MAX_MB mebibytes, else 2 GiB.
uint64_t default_cache_max_bytes();

}  // namespace loupe::prof
