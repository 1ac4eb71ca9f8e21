// A whole job's folder on any bytes: the index and up to four files beside
// it. The input is a run of sections, each a 4-byte little-endian length
// and that many bytes: job.json first, then rank-00000.g1.db to
// rank-00003.g1.db (the names a first generation's index gives its ranks).
// Reading the job, analysing it and writing a new job over it may end
// only in loupe's own errors, and the write either refuses the folder or
// leaves a job that reads back.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "fuzz_input.h"
#include "loupe/prof/input_file.h"
#include "loupe/prof/job.h"
#include "loupe/prof/job_analysis.h"
#include "loupe/prof/trace_writer.h"

namespace {

namespace fs = std::filesystem;
using namespace loupe::prof;

constexpr const char* kFiles[] = {"job.json", "rank-00000.g1.db", "rank-00001.g1.db", "rank-00002.g1.db",
                                  "rank-00003.g1.db"};

// The input's sections as files of `dir`, which starts empty.
void unpack(const uint8_t* data, size_t size, const std::string& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  size_t at = 0;
  for (const char* name : kFiles) {
    if (size - at < 4) return;
    uint32_t n = 0;
    std::memcpy(&n, data + at, 4);
    at += 4;
    n = uint32_t(std::min<size_t>(n, size - at));
    std::ofstream(dir + "/" + name, std::ios::binary).write(reinterpret_cast<const char*>(data + at), n);
    at += n;
  }
}

// A source for the write over the folder: a small loupe trace of rank 0.
const std::string& source() {
  static const std::string path = [] {
    std::string p = fs::path(loupe::fuzz::write_input(nullptr, 0, ".unused")).parent_path().string() + "/rank0.db";
    TraceWriter w(p, {});
    w.put(ThreadRow{.id = 0, .process = 1, .os_tid = 1, .name = "main", .dropped_events = 0});
    w.add(HostSpanRow{.thread = 0,
                      .start = 0,
                      .dur = 10,
                      .name = w.intern("step"),
                      .kind = SpanKind::user,
                      .depth = 0,
                      .callsite = 0});
    w.set_meta("rank", "0");
    w.close();
    return p;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir =
      fs::path(loupe::fuzz::write_input(nullptr, 0, ".unused")).parent_path().string() + "/job";
  unpack(data, size, dir);
  try {
    (void)read_job(dir);
    (void)analyze_job(dir, {.workers = 1});
  } catch (const JobError&) {
  } catch (const TraceError&) {
  }
  try {
    import_job({source()}, dir, {.workers = 1});
    Job written = read_job(dir);  // what was written reads back
    if (written.ranks.size() != 1) __builtin_trap();
  } catch (const JobError&) {
  }
  return 0;
}
