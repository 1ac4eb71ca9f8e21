// Input files: anything that is not a regular file is refused at once with
// a message naming it, never opened in a way that blocks; and the messages
// say what is really wrong.
#include "hostile_util.h"

namespace loupe::hostile {
namespace {

class InputFiles : public loupe::test::TempDirTest {};

// Defect 6: a FIFO given as an input blocked forever in open().
TEST_F(InputFiles, AFifoIsRefusedNotWaitedOn) {
  std::string fifo = dir.file("p");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  std::string trace = synth_trace(dir);
  for (const auto& args : std::vector<std::vector<std::string>>{{"info", fifo},
                                                                {"sql", fifo, "SELECT 1"},
                                                                {"summary", fifo},
                                                                {"analyze", fifo},
                                                                {"diff", trace, fifo},
                                                                {"check", trace, "--budget", fifo},
                                                                {"export", fifo, "--chrome", dir.file("out.json")},
                                                                {"import", fifo, "-o", dir.file("out.db")}}) {
    RunResult r = loupe(args, {.timeout_s = 20});
    EXPECT_FALSE(r.timed_out) << args[0] << " hung on a FIFO";
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(fifo + ": is a FIFO (a pipe), not a regular file"), std::string::npos)
        << args[0] << ": " << r.err;
  }
}

TEST_F(InputFiles, TheViewerRefusesAFifo) {
#ifndef LOUPE_VIEW_BIN
  GTEST_SKIP() << "loupe-view is not built (scripts/setup installs what it needs)";
#else
  std::string fifo = dir.file("p");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  RunResult r = run({"xvfb-run", "-a", LOUPE_VIEW_BIN, fifo, "--screenshot", dir.file("s.png")}, {.timeout_s = 60});
  EXPECT_FALSE(r.timed_out) << "loupe-view hung on a FIFO";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(fifo + ": is a FIFO (a pipe), not a regular file"), std::string::npos) << r.err;
#endif
}

TEST_F(InputFiles, ADeviceNodeIsRefused) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"info", "/dev/zero"},
                                                                {"import", "/dev/zero", "-o", dir.file("z.db")},
                                                                {"check", synth_trace(dir), "--budget", "/dev/zero"}}) {
    RunResult r = loupe(args, {.timeout_s = 20});
    EXPECT_FALSE(r.timed_out) << args[0] << " read /dev/zero forever";
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.err.find("/dev/zero: is a character device, not a regular file"), std::string::npos) << r.err;
  }
}

// Defect 16: a directory given as a budget said "no budgets in the file".
TEST_F(InputFiles, ADirectoryIsCalledADirectory) {
  std::string trace = synth_trace(dir);
  std::string folder = dir.file("budgets");
  std::filesystem::create_directory(folder);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"check", trace, "--budget", folder}, {"info", folder}, {"import", folder, "-o", dir.file("o.db")}}) {
    RunResult r = loupe(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.err.find(folder + ": is a directory, not a regular file"), std::string::npos) << r.err;
  }
}

// Defect 16: `loupe import <(zcat trace.json.gz)` said "at byte 0: not
// JSON": the stream had been read once to guess its format.
TEST_F(InputFiles, AProcessSubstitutionIsCalledAPipe) {
  std::string fixture = std::string(LOUPE_REPO_FIXTURES_DIR) + "/h100_qwen_infer.json.gz";
  std::string script = std::string("exec \"$0\" import <(zcat '") + fixture + "') -o '" + dir.file("o.db") + "'";
  RunResult r = run({"bash", "-c", script, LOUPE_BIN}, {.timeout_s = 30});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is a FIFO (a pipe), not a regular file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("save it to a file first"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not JSON"), std::string::npos) << r.err;
}

// Defect 16: a trace with a hot rollback journal (its writer died in the
// middle of a transaction) said "attempt to write a readonly database".
TEST_F(InputFiles, AHotJournalIsExplained) {
  std::string trace = synth_trace(dir, "t.db", 20'000);
  pid_t pid = fork();
  if (pid == 0) {
    // A writer that spills part of a transaction to the file, then dies.
    sqlite3* db = nullptr;
    sqlite3_open(trace.c_str(), &db);
    sqlite3_exec(db,
                 "PRAGMA journal_mode=DELETE; PRAGMA cache_size=2; BEGIN;"
                 "UPDATE device_ops SET dur = dur + 1; UPDATE host_spans SET dur = dur + 1;",
                 nullptr, nullptr, nullptr);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(std::filesystem::exists(trace + "-journal"));
  ASSERT_GT(std::filesystem::file_size(trace + "-journal"), 0u);
  for (const auto& args : std::vector<std::vector<std::string>>{{"info", trace}, {"summary", trace}}) {
    RunResult r = loupe(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(r.err.find("readonly database"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(trace + "-journal"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("stopped in the middle of a write"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace loupe::hostile
