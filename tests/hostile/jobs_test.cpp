// Jobs: a job's folder is written as one unit and read as one; what loupe
// did not write is never overwritten or deleted; an index and its traces
// are checked against each other; a CI gate on a job fails when it cannot
// read the job (docs/reliability.md, "Jobs").
#include <fmt/format.h>
#include <sys/file.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "hostile_util.h"

namespace loupe::hostile {
namespace {

namespace fs = std::filesystem;

// Every file of a folder and its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files[e.path().filename().string()] = read_file(e.path().string());
  return files;
}

class HostileJobs : public loupe::test::TempDirTest {
 protected:
  // A job of `ranks` ranks written by `loupe synth`.
  std::string synth_job(const std::string& name, int ranks, int events = 3000, int seed = 1) {
    std::string job = dir.file(name);
    RunResult r = loupe({"synth", "--ranks", std::to_string(ranks), "--events", std::to_string(events), "--seed",
                         std::to_string(seed), "-o", job, "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return job;
  }
  nlohmann::json index_of(const std::string& job) { return nlohmann::json::parse(read_file(job + "/job.json")); }
  void write_index(const std::string& job, const nlohmann::json& index) { write_file(job + "/job.json", index.dump()); }
};

// Defect 1: a write that failed (a full disk) had already removed the old
// job's traces, leaving only job.json. The old job stays byte for byte,
// and nothing of the new one is left.
TEST_F(HostileJobs, AFailedWriteLeavesThePreviousJobByteForByte) {
  std::string job = synth_job("job", 4);
  auto before = snapshot(job);
  ASSERT_EQ(before.size(), 5u);
  std::string source = synth_trace(dir, "rank0.db", 20'000);
  std::vector<std::vector<std::string>> writes = {
      {"synth", "--ranks", "4", "--events", "20000", "-o", job, "-q"},
      {"import", "--job", source, "-o", job, "-q"},
  };
  for (const auto& args : writes) {
    RunResult r = loupe(args, {.file_size_limit = 100'000});
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(job + "/"), std::string::npos) << args[0] << ": the file it could not write: " << r.err;
    EXPECT_EQ(snapshot(job), before) << args[0] << " changed the job it failed to replace";
  }
  RunResult info = loupe({"info", job});
  EXPECT_EQ(info.exit_code, 0) << info.err;
}

// Defect 1: a rank whose trace could not be written was taken for a bad
// input, and a 4-rank job replaced by a 1-rank job with exit 1. A write
// error fails the whole write (exit 2) and the old job stays.
TEST_F(HostileJobs, ARankThatCannotBeWrittenIsAWriteErrorNotABadInput) {
  std::string job = synth_job("job", 2);
  auto before = snapshot(job);
  std::vector<std::string> sources;
  for (int r = 0; r < 4; ++r) {
    std::string s = dir.file("rank" + std::to_string(r) + ".db");
    ASSERT_EQ(loupe({"synth", "-o", s, "--events", r == 2 ? "60000" : "500", "-q"}).exit_code, 0);
    sources.push_back(s);
  }
  std::vector<std::string> args = {"import", "-o", job, "-q"};
  args.insert(args.end(), sources.begin(), sources.end());
  RunResult r = loupe(args, {.file_size_limit = int64_t(fs::file_size(sources[0])) * 4});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(snapshot(job), before);
}

// Defect 1: something in the way of a rank's new name (a folder) left new
// traces under the old index. The folder is refused before anything is
// written.
TEST_F(HostileJobs, SomethingInTheWayOfARankIsRefusedBeforeAnyWrite) {
  std::string job = synth_job("job", 3);
  fs::create_directory(job + "/rank-00001.g2.db");
  auto before = snapshot(job);
  RunResult r = loupe({"synth", "--ranks", "3", "--events", "1000", "-o", job, "-q"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("rank-00001.g2.db, which is not part of a job"), std::string::npos) << r.err;
  EXPECT_EQ(snapshot(job), before);
}

// Defect 2: two imports into one folder at once ended, 3 times in 5, with
// only job.json. One writer at a time: the other is refused at once, and
// the folder always holds one whole job.
TEST_F(HostileJobs, TwoWritersIntoOneFolderNeverLoseTheJob) {
  std::string job = synth_job("job", 4);
  std::string a = synth_trace(dir, "rank0.db", 40'000), b = synth_trace(dir, "rank1.db", 40'000);
  for (int round = 0; round < 5; ++round) {
    RunResult first, second;
    std::thread t([&] { first = loupe({"import", "--job", a, b, "-o", job, "-q"}); });
    second = loupe({"import", "--job", b, a, "-o", job, "-q"});
    t.join();
    for (const RunResult* r : {&first, &second}) {
      EXPECT_TRUE(r->exit_code == 0 || r->exit_code == 1 || r->exit_code == 2) << r->err;
      if (r->exit_code == 2) {
        EXPECT_NE(r->err.find("another loupe is writing"), std::string::npos) << "round " << round << ": " << r->err;
      }
    }
    EXPECT_TRUE(first.exit_code != 2 || second.exit_code != 2) << "one of the two writes";
    RunResult info = loupe({"info", job});
    EXPECT_EQ(info.exit_code, 0) << "round " << round << ": " << info.err;
    std::vector<std::string> files = files_in(job);
    EXPECT_GE(files.size(), 2u) << "round " << round << ": the folder lost its traces";
  }
}

// The lock is the folder's: a writer holding it makes another wait for
// nothing, and say so.
TEST_F(HostileJobs, AFolderLockedByAnotherWriterIsRefusedAtOnce) {
  std::string job = synth_job("job", 2);
  auto before = snapshot(job);
  int fd = open(job.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  RunResult r = loupe({"synth", "--ranks", "2", "-o", job, "-q"}, {.timeout_s = 20});
  close(fd);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("another loupe is writing a job into this folder"), std::string::npos) << r.err;
  EXPECT_EQ(snapshot(job), before);
}

// Defect 3: any job.json made a folder "a job": a user's own job.json was
// overwritten, one linked to a file elsewhere written through, and an
// index naming notes.txt made a re-import delete it.
TEST_F(HostileJobs, OnlyAJobLoupeWroteIsEverReplaced) {
  std::string mine = dir.file("mine");
  fs::create_directory(mine);
  write_file(mine + "/job.json", "{\"my\": \"own settings\"}\n");
  std::string outside = dir.file("outside.json");
  write_file(outside, "precious\n");
  std::string linked = dir.file("linked");
  fs::create_directory(linked);
  fs::create_symlink(outside, linked + "/job.json");
  std::string listed = synth_job("listed", 2);
  write_file(listed + "/notes.txt", "my notes\n");
  nlohmann::json index = index_of(listed);
  index["ranks"][1]["trace"] = "notes.txt";
  write_index(listed, index);

  for (const std::string& folder : {mine, linked, listed}) {
    auto before = snapshot(folder);
    RunResult r = loupe({"synth", "--ranks", "2", "--events", "500", "-o", folder, "-q"});
    EXPECT_EQ(r.exit_code, 2) << folder << ": " << r.err;
    EXPECT_NE(r.err.find("over a job loupe wrote"), std::string::npos) << r.err;
    EXPECT_EQ(snapshot(folder), before) << folder;
  }
  EXPECT_EQ(read_file(outside), "precious\n");
  EXPECT_TRUE(fs::is_symlink(linked + "/job.json"));
  EXPECT_EQ(read_file(listed + "/notes.txt"), "my notes\n");
}

// Defect 4: a device node at a rank's path was replaced by the job
// import's rename. It is never replaced, named by the index or in the way.
TEST_F(HostileJobs, ADeviceNodeInAJobFolderIsNeverReplaced) {
  std::string job = synth_job("job", 2);
  std::string node = job + "/rank-00000.g2.db";
  if (!make_null_device(node)) GTEST_SKIP() << "making a device node needs root";
  RunResult r = loupe({"import", "--job", synth_trace(dir, "rank0.db", 500), "-o", job, "-q"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("rank-00000.g2.db, which is not part of a job"), std::string::npos) << r.err;
  EXPECT_TRUE(is_char_device(node));
  // Named by the index as a rank's trace: not a trace loupe wrote.
  fs::remove(node);
  std::string named = job + "/rank-00001.g1.db";
  fs::remove(named);
  ASSERT_TRUE(make_null_device(named));
  r = loupe({"synth", "--ranks", "2", "-o", job, "-q"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(is_char_device(named));
  RunResult a = loupe({"analyze", job});
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.err.find("is a character device, not a regular file"), std::string::npos) << a.err;
}

// Defect 6: `check` passed ("no rank could be read") and `analyze` exited 0
// on a job none of whose traces could be read.
TEST_F(HostileJobs, AJobWithNoReadableRankFailsCheckAndAnalyze) {
  std::string job = synth_job("job", 4);
  nlohmann::json index = index_of(job);
  for (const auto& rank : index["ranks"]) write_file(job + "/" + rank["trace"].get<std::string>(), "garbage");
  std::string budget = dir.file("budget.toml");
  write_file(budget, "straggler_fraction_max = 0.5\nidle_fraction_max = 0.9\n");
  RunResult c = loupe({"check", job, "--budget", budget});
  EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
  EXPECT_EQ(c.out.find("pass"), std::string::npos) << c.out;
  EXPECT_NE(c.err.find("no rank of the job could be read"), std::string::npos) << c.err;
  RunResult a = loupe({"analyze", job});
  EXPECT_EQ(a.exit_code, 2) << a.out;
  EXPECT_NE(a.err.find("no rank of the job could be read"), std::string::npos) << a.err;
  // Some ranks readable: the check runs, and says which were left out.
  write_file(budget, "idle_fraction_max = 0.99\n");
  RunResult good = loupe({"synth", "--ranks", "4", "--events", "3000", "-o", dir.file("half"), "-q"});
  ASSERT_EQ(good.exit_code, 0);
  nlohmann::json half = index_of(dir.file("half"));
  write_file(dir.file("half") + "/" + half["ranks"][3]["trace"].get<std::string>(), "garbage");
  RunResult partial = loupe({"check", dir.file("half"), "--budget", budget});
  EXPECT_EQ(partial.exit_code, 0) << partial.err;
  EXPECT_NE(partial.err.find("1 of the job's 4 ranks are left out of the check"), std::string::npos) << partial.err;
}

// Defect 7: a loupe trace claiming a job of 2^62 ranks crashed the import
// (std::bad_alloc) and left a half-written folder that blocked every
// re-run. Defect 8: a rank from a name like rank5000000.json wrote an
// index every command then refused.
TEST_F(HostileJobs, RanksAndSizesBeyondTheLimitAreRefusedBeforeAnythingIsWritten) {
  std::string huge = synth_trace(dir, "huge.db", 500);
  tamper(huge, "INSERT OR REPLACE INTO meta VALUES ('rank', '0'), ('world_size', '4611686018427387904')");
  std::string far = dir.file("rank5000000.json");
  write_file(far, R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                      "ts": 10, "dur": 5}]})");
  std::string job = dir.file("job");
  RunResult r = loupe({"import", "--job", huge, "-o", job}, {.timeout_s = 60});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("a job of 4611686018427387904 ranks, beyond the 1048576 a job may have"), std::string::npos)
      << r.err;
  EXPECT_TRUE(files_in(job).empty());
  r = loupe({"import", "--job", far, "-o", job});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is rank 5000000, beyond the 1048576 ranks a job may have"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 1000u);
  EXPECT_TRUE(files_in(job).empty());
  RunResult again = loupe({"import", "--job", synth_trace(dir, "rank0.db", 500), "-o", job, "-q"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

// Defect 9: collective sizes past int64 wrapped at import (exit 0) into a
// file the reader refused. A size no message has is left out and counted;
// sizes that add up past 2^60 fail the import; what is written reads back.
TEST_F(HostileJobs, CollectiveSizesPastInt64NeitherWrapNorWriteAnUnreadableTrace) {
  auto kineto = [&](const std::vector<std::string>& nelems) {
    std::string events;
    int64_t ts = 100;
    for (size_t i = 0; i < nelems.size(); ++i, ts += 100) {
      events += fmt::format(
          R"({{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 7,
              "ts": {}, "dur": 10, "args": {{"device": 0, "stream": 7, "correlation": {}, "Collective name":
              "allreduce", "dtype": "Float", "In msg nelems": {}, "Out msg nelems": {}, "Group size": 2}}}},)",
          ts, i + 1, nelems[i], nelems[i]);
    }
    events += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
                 "args": {"device": 0, "stream": 7, "correlation": 99}})";
    return R"({"schemaVersion": 1, "traceEvents": [)" + events + "]}";
  };
  std::string wrap = dir.file("wrap.json"), sum = dir.file("sum.json");
  write_file(wrap, kineto({"2305843009213693952", "4611686018427387904", "1000"}));             // 2^61, 2^62
  write_file(sum, kineto({"100000000000000000", "100000000000000000", "100000000000000000"}));  // 3 x 4e17 bytes
  RunResult r = loupe({"import", wrap, "-o", dir.file("wrap.db")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("collectives with a message size of 2^60 bytes or more"), std::string::npos) << r.out;
  EXPECT_EQ(query_int(dir.file("wrap.db"), "SELECT count(*) FROM collectives"), 1);
  EXPECT_EQ(query_int(dir.file("wrap.db"), "SELECT in_bytes FROM collectives"), 4000);
  RunResult a = loupe({"analyze", dir.file("wrap.db")});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  r = loupe({"import", sum, "-o", dir.file("sum.db")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("add up to 2^60 or more"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("sum.db")));
}

// Defect 10: the index was not checked against each trace's own rank:
// swapped files blamed the wrong rank, and two ranks naming one trace hid
// the straggler (and a million of them amplified the cost of reading it).
TEST_F(HostileJobs, TheIndexIsCheckedAgainstEachTrace) {
  std::string job = synth_job("job", 4);
  nlohmann::json index = index_of(job);
  nlohmann::json swapped = index;
  std::swap(swapped["ranks"][0]["trace"], swapped["ranks"][1]["trace"]);
  write_index(job, swapped);
  RunResult a = loupe({"analyze", job});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("rank 0: cannot be read, left out: " + job +
                       "/rank-00001.g1.db says it is rank 1 (meta.rank), "
                       "but the job's index lists it as rank 0"),
            std::string::npos)
      << a.out;
  EXPECT_NE(a.out.find("rank 1: cannot be read, left out"), std::string::npos) << a.out;
  nlohmann::json shared = index;
  shared["ranks"][2]["trace"] = shared["ranks"][3]["trace"];
  write_index(job, shared);
  a = loupe({"analyze", job});
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.err.find("ranks 2 and 3 both name the trace rank-00003.g1.db"), std::string::npos) << a.err;
  // Another name for the same file (a hard link) is the same file.
  write_index(job, index);
  fs::remove(job + "/rank-00002.g1.db");
  fs::create_hard_link(job + "/rank-00003.g1.db", job + "/rank-00002.g1.db");
  a = loupe({"info", job});
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.err.find("ranks 2 and 3 name one file"), std::string::npos) << a.err;
}

// Defect 11: readers during a re-import saw the old index with new traces
// (31 reads in 2,037) and exited 0. Every reading now is one job, whole:
// the report of the old job or of the new one, byte for byte.
TEST_F(HostileJobs, ReadersDuringARewriteSeeOneJobOrTheOther) {
  std::string job = dir.file("job");
  const std::vector<std::vector<std::string>> writes = {
      {"synth", "--ranks", "3", "--events", "3000", "--seed", "1", "-o", job, "-q"},
      {"synth", "--ranks", "3", "--events", "9000", "--seed", "2", "-o", job, "-q"}};
  std::set<std::string> pure;
  for (const auto& w : writes) {
    ASSERT_EQ(loupe(w).exit_code, 0);
    RunResult a = loupe({"analyze", job, "--format", "json"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    pure.insert(a.out);
  }
  ASSERT_EQ(pure.size(), 2u);
  std::atomic<bool> stop{false};
  std::atomic<int> rewrites{0};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      if (loupe(writes[size_t(i % 2)]).exit_code == 0) ++rewrites;
    }
  });
  // Reads until the job was written over at least six times (a minute at
  // most: a build running beside it, or a sanitizer, slows both sides).
  int reads = 0, mixed = 0, refused = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && (rewrites < 6 || reads < 100) && reads < 300) {
    RunResult a = loupe({"analyze", job, "--format", "json"});
    ++reads;
    if (a.exit_code == 0) {
      mixed += pure.count(a.out) == 0;
    } else {
      ++refused;
      EXPECT_NE(a.err.find("written over"), std::string::npos) << a.err;
    }
  }
  stop = true;
  writer.join();
  EXPECT_GE(rewrites, 6) << "the writer kept rewriting the job";
  EXPECT_EQ(mixed, 0) << "of " << reads << " reads";
  EXPECT_LT(refused, reads) << "a read succeeds";
}

// Defect 13: an interrupted job import left staging files the next run
// refused the folder for ("neither empty nor a job"), though `ls` showed
// nothing; a single-file import left its temporary after Ctrl-C.
TEST_F(HostileJobs, AnInterruptedWriteIsCleanedUpAndTheRerunSucceeds) {
  std::string job = synth_job("job", 2);
  // What a writer killed mid-way leaves: staged traces of the generation
  // it was writing, a temporary file, and an older loupe's staging file.
  for (const char* left : {"stage-0.g2.db", "rank-00001.g2.db", "rank-00000.g2.db.loupe-tmp-999999-0",
                           "job.json.loupe-tmp-999999-1", ".import-0.db"}) {
    write_file(job + "/" + left, "left by a writer that died");
  }
  RunResult r = loupe({"synth", "--ranks", "2", "--events", "500", "-o", job, "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(files_in(job), (std::vector<std::string>{"job.json", "rank-00000.g2.db", "rank-00001.g2.db"}));

  // Ctrl-C in the middle of a single-file import of a large trace.
  std::string big = dir.file("big.json");
  std::string events = R"({"traceEvents": [)";
  for (int i = 0; i < 400'000; ++i) {
    events += fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "op{}", "pid": 1, "tid": 1, "ts": {}, "dur": 1}},)",
                          i % 1000, i * 2);
  }
  events += R"({"ph": "X", "cat": "cpu_op", "name": "last", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]})";
  write_file(big, events);
  fs::create_directory(dir.file("out"));
  int interrupted = 0;
  for (int delay_ms : {150, 300, 600}) {
    pid_t pid = fork();
    if (pid == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execl(LOUPE_BIN, LOUPE_BIN, "import", big.c_str(), "-o", dir.file("out/big.db").c_str(), nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) ++interrupted;
    for (const std::string& name : files_in(dir.file("out"))) {
      EXPECT_EQ(name, "big.db") << "left behind after Ctrl-C " << delay_ms << " ms in";
    }
  }
  EXPECT_GT(interrupted, 0) << "the import was interrupted at least once";
}

// Defect 16: a NUL in an index's trace name cut the message short; a FIFO,
// directory or device node as a rank's trace was called "missing".
TEST_F(HostileJobs, AnIndexsBadNamesAndFilesAreNamedWhole) {
  std::string job = synth_job("job", 3);
  nlohmann::json index = index_of(job);
  nlohmann::json nul = index;
  nul["ranks"][0]["trace"] = std::string("rank\0/../x", 10);
  write_index(job, nul);
  RunResult r = loupe({"info", job});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("rank\\x00/../x' is not a file name in the job's folder"), std::string::npos) << r.err;
  write_index(job, index);
  std::string fifo = job + "/" + index["ranks"][1]["trace"].get<std::string>();
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  r = loupe({"analyze", job}, {.timeout_s = 20});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is a FIFO (a pipe), not a regular file"), std::string::npos) << r.err;
  fs::remove(fifo);
  fs::create_directory(fifo);
  r = loupe({"info", job});
  EXPECT_NE(r.err.find("is a directory, not a regular file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loupe::hostile
