// `loupe import` as a user runs it: output, exit codes, one stderr line for
// a bad file, and `loupe info` on the result.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "import/import_test_util.h"
#include "profiler/test_files.h"
#include "run_command.h"

namespace {

const char* kTrace = R"JSON({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 11, "dur": 2, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 13, "dur": 4, "args": {"device": 0, "stream": 7, "correlation": 7}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "mm", "pid": 0, "tid": 7, "ts": 13, "dur": 4}
]})JSON";

TEST(ImportCli, ImportsAndInfoShowsWhatWasSkipped) {
  loupe::test::TempDir dir;
  loupe::test::write_gzip(dir.file("trace.json.gz"), kTrace);
  auto r = loupe::test::run_command({LOUPE_BIN, "import", dir.file("trace.json.gz")}, dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(kineto,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped 1 source events"), std::string::npos) << r.out;
  // The default output sits beside the input, its extension replaced.
  ASSERT_TRUE(std::filesystem::exists(dir.file("trace.db")));
  auto info = loupe::test::run_command({LOUPE_BIN, "info", dir.file("trace.db")}, dir.path().string());
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("status     imported"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("skipped    1 (unknown kinds at import)"), std::string::npos) << info.out;

  auto quiet = loupe::test::run_command(
      {LOUPE_BIN, "import", dir.file("trace.json.gz"), "-o", dir.file("q.db"), "--format", "kineto", "-q"},
      dir.path().string());
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_TRUE(quiet.out.empty());
}

TEST(ImportCli, BadInputExitsTwoWithOneLine) {
  loupe::test::TempDir dir;
  loupe::test::write_text(dir.file("cut.json"), std::string(kTrace).substr(0, 120));
  loupe::test::write_text(dir.file("empty.json"), "");
  loupe::test::write_text(dir.file("ok.json"), kTrace);
  for (std::vector<std::string> args :
       {std::vector<std::string>{LOUPE_BIN, "import", dir.file("cut.json"), "-o", dir.file("o.db")},
        {LOUPE_BIN, "import", dir.file("empty.json"), "-o", dir.file("o.db")},
        {LOUPE_BIN, "import", dir.file("missing.json"), "-o", dir.file("o.db")},
        {LOUPE_BIN, "import", dir.file("ok.json"), "-o", dir.file("o.db"), "--format", "nsys"},
        {LOUPE_BIN, "import", dir.file("ok.json"), "-o", dir.file("o.db"), "--format", "perfetto"}}) {
    auto r = loupe::test::run_command(args, dir.path().string());
    EXPECT_EQ(r.exit_code, 2) << args[2];
    EXPECT_EQ(r.err.rfind("loupe: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line, usage errors too
    EXPECT_FALSE(std::filesystem::exists(dir.file("o.db")));
  }
  auto r = loupe::test::run_command({LOUPE_BIN, "import", dir.file("cut.json"), "-o", dir.file("o.db")},
                                    dir.path().string());
  EXPECT_NE(r.err.find("at byte 120: truncated JSON"), std::string::npos) << r.err;
}

}  // namespace
