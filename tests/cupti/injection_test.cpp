// The injection library loads and initialises on a machine without a GPU:
// the program runs on, and a trace file is still written at exit.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"
#include "run_command.h"

// Whether the CUDA driver is installed and sees a device (asked through the
// driver API, loaded at run time, as the test must run without one).
bool gpu_present() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return false;
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  auto init = reinterpret_cast<Init>(::dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(::dlsym(driver, "cuDeviceGetCount"));
  int n = 0;
  return init && count && init(0) == 0 && count(&n) == 0 && n > 0;
}

TEST(Injection, LoadsAndExitsCleanlyWithoutAGpu) {
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: CaptureGpu.* records through the injection library there";
  loupe::test::TempDir dir;
  std::string trace = dir.file("t.db");
  ::setenv("LOUPE_TRACE", trace.c_str(), 1);
  auto r = loupe::test::run_command({LOUPE_INJECT_PROBE, LOUPE_INJECT_LIBRARY}, dir.path().string());
  ::unsetenv("LOUPE_TRACE");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Without a driver CUPTI cannot start: said once, and the program ran on.
  EXPECT_NE(r.err.find("loupe: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the trace holds no GPU activity"), std::string::npos) << r.err;
  loupe::prof::TraceModel m = loupe::prof::load_trace(trace);
  EXPECT_EQ(m.info.status, "complete");
  EXPECT_EQ(m.info.producer, "loupe capture");
  EXPECT_NE(m.info.meta.at("command_line").find("inject_probe"), std::string::npos);
}
