// A job's index (job.json) on any bytes, in a folder that holds two rank
// files. Bad input may only end in a JobError.
#include <filesystem>
#include <fstream>

#include "fuzz_input.h"
#include "loupe/prof/job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const std::string dir = [] {
    std::string d = fs::path(loupe::fuzz::write_input(nullptr, 0, ".unused")).parent_path().string() + "/job";
    fs::create_directories(d);
    std::ofstream(d + "/rank-00000.db").flush();
    std::ofstream(d + "/rank-00001.db").flush();
    return d;
  }();
  std::ofstream(dir + "/job.json", std::ios::binary).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  try {
    loupe::prof::Job job = loupe::prof::read_job(dir);
    for (const loupe::prof::JobRank& r : job.ranks) (void)job.trace_path(r);
  } catch (const loupe::prof::JobError&) {
  }
  return 0;
}
