// The critical path of a run: the chain of dependent work, from the first
// event to the last, that set how long the run took. Shortening anything
// off it saves nothing; shortening something on it saves at most its time
// on the path. docs/analyses.md ("Critical path") gives the dependencies it
// follows and the evidence each needs.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace loupe::prof {

// What bounds a stretch of the path.
enum class PathCategory : uint8_t {
  host_compute = 0,     // the host running the program's code (or anything nothing recorded)
  data_loading = 1,     // the host inside a DataLoader range
  launch_overhead = 2,  // the host inside launch calls; launch latency; device gaps between queued ops
  kernel = 3,           // a kernel computing
  copy = 4,             // a copy or memset
  communication = 5,    // a collective kernel
  synchronisation = 6,  // a stream waiting for another; a host wait that waited on nothing recorded
};
constexpr size_t kPathCategories = 7;
std::string_view name_of(PathCategory c);

// One stretch of the path: on a host thread (`on_device` false) or a
// device op's stream.
struct PathSegment {
  int64_t start = 0, end = 0;
  PathCategory category = PathCategory::host_compute;
  bool on_device = false;
  uint32_t thread = 0;              // host: the thread
  uint32_t device = 0, stream = 0;  // device: where the op ran
  uint32_t name = 0;                // device: the op's name (a string id); 0 on the host
};

struct PathBreakdown {
  int64_t start = 0, end = 0;
  int64_t ns[kPathCategories] = {};  // adds up to end - start
};

struct CriticalPath {
  // In time order, contiguous: each segment starts where the one before
  // ended, from the path's start to the end of the last event.
  std::vector<PathSegment> segments;
  PathBreakdown whole;
  // The path within each step's range (its start to its end, clipped to
  // the path's): what bound that step's time, adding up to it.
  struct Step {
    int64_t number = 0;
    PathBreakdown time;
  };
  std::vector<Step> steps;
  // Evidence the trace lacks, each costing the path some truth: "no
  // cuda_sync records: waits are matched to the device work by time".
  std::vector<std::string_view> missing;
  // Host waits whose device work was found by time, not by a record.
  uint64_t waits_by_time = 0;
  // Device ops that started later than anything recorded explains (their
  // launch, the op before them on their stream, a recorded stream wait)
  // by more than AnalysisOptions::kernel_wait_max_ns, joined by time to
  // the op that ended last before them on another stream of their device:
  // a stream wait the trace does not record (cudaStreamWaitEvent without
  // Kineto's cuda_sync records).
  uint64_t stream_waits_by_time = 0;
};

// The path into one collective of a rank, or into the rank's end: walked
// back from the moment the rank reached it (the collective kernel's
// start; the run's last event) until the walk reaches the end of an
// earlier collective of the rank, or the rank's first event. A job's path
// (JobReport::critical_path) chains these through each collective's last
// rank to arrive.
struct ArrivalPath {
  bool known = false;                // false: cannot tell (a collective run on the host, or the walk's bound reached)
  int64_t from = 0, to = 0;          // the end of `after` (or the rank's first event) to the arrival
  int64_t after = -1;                // the collective it starts at, as an index into ArrivalPaths::collectives; -1 none
  int64_t ns[kPathCategories] = {};  // by what bound it; adds up to to - from
};

struct ArrivalPaths {
  std::vector<ArrivalPath> collectives;  // one per collective row of the model, its tracks' rows in order
  ArrivalPath end;                       // into the end of the run
};

}  // namespace loupe::prof
