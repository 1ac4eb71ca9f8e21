// Output files: loupe never replaces what is not a regular file, never
// deletes a user's file before the new one is complete, never writes over
// its own input, and reports every failed write (docs/reliability.md).
#include <sqlite3.h>

#include "hostile_util.h"

namespace loupe::hostile {
namespace {

class OutputFiles : public loupe::test::TempDirTest {
 protected:
  // A real Kineto trace kept in the repository (its import is over 100 KB).
  std::string kineto() const { return std::string(LOUPE_REPO_FIXTURES_DIR) + "/h100_qwen_infer.json.gz"; }
};

// Defect 1: a device node (or FIFO) named as an output was replaced by a
// regular file or deleted. Each command refuses it and leaves it alone.
TEST_F(OutputFiles, ADeviceNodeIsNeverReplacedOrDeleted) {
  std::string node = dir.file("null");
  if (!make_null_device(node)) GTEST_SKIP() << "making a device node needs root";
  std::string trace = synth_trace(dir);
  std::vector<std::vector<std::string>> commands = {
      {"synth", "-o", node, "--events", "100", "-q"},
      {"import", kineto(), "-o", node, "-q"},
      {"record", "-q", "-o", node, "--", LOUPE_TRAIN_MLP, "--epochs", "1"},
      {"export", trace, "--chrome", node},
      {"check", trace, "--budget", LOUPE_BUDGET_FILE, "--junit", node},
  };
  for (const auto& args : commands) {
    RunResult r = loupe(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(node), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_TRUE(is_char_device(node)) << args[0] << " replaced or removed the device node";
  }
}

TEST_F(OutputFiles, AFifoIsNeverWrittenOrReplaced) {
  std::string fifo = dir.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  std::string trace = synth_trace(dir);
  for (const auto& args : std::vector<std::vector<std::string>>{{"synth", "-o", fifo, "--events", "100", "-q"},
                                                                {"import", kineto(), "-o", fifo, "-q"},
                                                                {"export", trace, "--chrome", fifo}}) {
    RunResult r = loupe(args, {.timeout_s = 20});
    EXPECT_FALSE(r.timed_out) << args[0] << " hung on a FIFO output";
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << args[0] << ": " << r.err;
    struct stat st {};
    EXPECT_TRUE(lstat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) << args[0] << " replaced the FIFO";
  }
}

// A symbolic link to a regular file is written through: the link stays and
// the file it names gets the trace.
TEST_F(OutputFiles, ASymlinkToAFileIsWrittenThrough) {
  std::filesystem::create_directory(dir.path() / "real");
  std::string target = dir.file("real/trace.db"), link = dir.file("link.db");
  write_file(target, "old");
  std::filesystem::create_symlink(target, link);
  RunResult r = loupe({"synth", "-o", link, "--events", "100", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(query_int(target, "SELECT count(*) FROM meta WHERE key = 'producer'"), 1);
  EXPECT_EQ(files_in(dir.path() / "real"), std::vector<std::string>{"trace.db"}) << "no temporary file left";
}

// Defect 2: `record` and `capture` deleted the output before the program
// even started.
TEST_F(OutputFiles, AProgramThatCannotStartDeletesNothing) {
  std::string keep = dir.file("keep.db"), notes = dir.file("notes.txt");
  std::string trace = synth_trace(dir, "keep.db", 200);
  std::string before = read_file(keep);
  write_file(notes, "my notes\n");
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"record", "-o", keep, "--", dir.file("nonexistent")},
                                             {"record", "-o", notes, "--", dir.file("nonexistent")},
                                             {"capture", "-o", keep, "--", dir.file("nonexistent")}}) {
    RunResult r = loupe(args);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_NE(r.err.find("nonexistent"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(read_file(keep) == before) << "keep.db changed";
  EXPECT_EQ(read_file(notes), "my notes\n");
}

// A program that runs but never records leaves the old trace in place, and
// loupe does not take the old trace for this run's.
TEST_F(OutputFiles, AProgramThatRecordsNothingLeavesTheOldTraceAndSaysSo) {
  std::string keep = synth_trace(dir, "keep.db", 200);
  std::string before = read_file(keep);
  RunResult r = loupe({"record", "-o", keep, "--", "/bin/true"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("without writing"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file(keep) == before) << "keep.db changed";
}

// Recording over an existing trace replaces it with this run's.
TEST_F(OutputFiles, RecordingReplacesAnOlderTrace) {
  std::string path = synth_trace(dir, "run.db", 200);
  RunResult r = loupe({"record", "-q", "-o", path, "--", LOUPE_TRAIN_MLP, "--epochs", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(query_int(path, "SELECT count(*) FROM meta WHERE key = 'producer' AND value = 'train_mlp'"), 1);
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"run.db"});
}

// Defect 3: exporting over the trace being exported replaced it with JSON.
TEST_F(OutputFiles, ExportRefusesToWriteOverItsInput) {
  std::string trace = synth_trace(dir, "v.db", 500);
  std::string before = read_file(trace);
  RunResult r = loupe({"export", trace, "--chrome", trace});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("same file"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file(trace) == before) << "the trace changed";
  // Also through another name for the same file.
  std::string alias = dir.file("alias.db");
  ASSERT_EQ(link(trace.c_str(), alias.c_str()), 0);
  r = loupe({"export", trace, "--chrome", alias});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(read_file(trace) == before) << "the trace changed";
}

// Defect 3: a write that fails part way (a full disk, a file size limit)
// left a truncated file where the previous export was.
TEST_F(OutputFiles, AFailedExportKeepsThePreviousOneWhole) {
  std::string trace = synth_trace(dir, "v.db", 20'000);
  std::string json = dir.file("v.json");
  ASSERT_EQ(loupe({"export", trace, "--chrome", json}).exit_code, 0);
  std::string before = read_file(json);
  ASSERT_GT(before.size(), 200'000u);
  RunResult r = loupe({"export", trace, "--chrome", json}, {.file_size_limit = 100'000, .stdout_to_null = true});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(json), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("too large"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file(json) == before) << "the previous export changed";
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"v.db", "v.json"})) << "no temporary file left";
}

// A WAL file with committed frames of another database, as a crashed
// writer leaves beside its file.
void make_stale_wal(const std::string& db_path, const std::string& wal_copy) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
                         "CREATE TABLE junk(x); INSERT INTO junk VALUES (randomblob(100000));",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  std::filesystem::copy_file(db_path + "-wal", wal_copy);
  sqlite3_close(db);
}

// Defect 4: importing over an output that had a stale -wal beside it gave
// a malformed database.
TEST_F(OutputFiles, ImportOverAStaleWalGivesAGoodTrace) {
  std::string out = dir.file("out.db");
  synth_trace(dir, "out.db", 200);
  make_stale_wal(dir.file("other.db"), out + "-wal");
  RunResult r = loupe({"import", kineto(), "-o", out, "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "-wal"));
  RunResult info = loupe({"info", out});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  RunResult summary = loupe({"summary", out});
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  // The same rows as an import to a fresh file.
  ASSERT_EQ(loupe({"import", kineto(), "-o", dir.file("fresh.db"), "-q"}).exit_code, 0);
  EXPECT_EQ(query_int(out, "SELECT count(*) FROM device_ops"),
            query_int(dir.file("fresh.db"), "SELECT count(*) FROM device_ops"));
}

// Defect 5: a JUnit report that could not be written gave exit 0 and an
// empty file.
TEST_F(OutputFiles, AJUnitReportThatCannotBeWrittenFailsTheCheck) {
  std::string trace = synth_trace(dir);
  std::string junit = dir.file("j.xml");
  RunResult r = loupe({"check", trace, "--budget", LOUPE_BUDGET_FILE, "--junit", junit},
                      {.file_size_limit = 64, .stdout_to_null = true});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(junit), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(junit)) << "no partial report";
  RunResult full = loupe({"check", trace, "--budget", LOUPE_BUDGET_FILE, "--junit", "/dev/full"});
  EXPECT_EQ(full.exit_code, 2) << full.err;
  EXPECT_NE(full.err.find("/dev/full"), std::string::npos) << full.err;
}

// Every output command writes beside the target and renames: a failure
// leaves nothing behind, and success leaves only the output.
TEST_F(OutputFiles, FailedWritesLeaveNoTemporaryFiles) {
  std::string out = dir.file("big.db");
  RunResult r = loupe({"synth", "-o", out, "--events", "200000", "-q"}, {.file_size_limit = 200'000});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  EXPECT_TRUE(files_in(dir.path()).empty()) << files_in(dir.path()).front();
  r = loupe({"import", kineto(), "-o", out, "-q"}, {.file_size_limit = 100'000});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(files_in(dir.path()).empty());
}

}  // namespace
}  // namespace loupe::hostile
