// What a stranger's file does to the commands that read any input
// (open_input.h): each meets the importers' promises (docs/reliability.md)
// whether the cache of imported traces is on or off: an enormous event
// refused in bounded memory, a gzip bomb streamed in bounded memory, a
// 10 GB file that is no trace refused at its first byte (never hashed for
// the cache whole), a profile folder with a link loop or a hundred
// thousand files named rather than walked without end.
#include <fmt/format.h>
#include <stdlib.h>
#include <zlib.h>

#include <filesystem>

#include "hostile_util.h"

namespace loupe::hostile {
namespace {

namespace fs = std::filesystem;

class ReadingInputs : public loupe::test::TempDirTest {
 protected:
  void SetUp() override { setenv("LOUPE_CACHE_DIR", dir.file("cache").c_str(), 1); }
  void TearDown() override { unsetenv("LOUPE_CACHE_DIR"); }
  bool cache_is_empty() const {
    std::error_code ec;
    return !fs::exists(dir.file("cache")) || fs::is_empty(dir.file("cache"), ec);
  }
  // `head`, then `repeat` bytes of `fill`, then `tail`, gzipped (level 1).
  std::string gzip(const std::string& name, const std::string& head, char fill, size_t repeat,
                   const std::string& tail) {
    std::string path = dir.file(name);
    gzFile f = gzopen(path.c_str(), "wb1");
    EXPECT_NE(f, nullptr);
    gzwrite(f, head.data(), unsigned(head.size()));
    std::string chunk(1 << 20, fill);
    for (size_t done = 0; done < repeat; done += chunk.size()) gzwrite(f, chunk.data(), unsigned(chunk.size()));
    gzwrite(f, tail.data(), unsigned(tail.size()));
    gzclose(f);
    return path;
  }
};

TEST_F(ReadingInputs, AnEnormousEventIsRefusedByEveryReadingCommandInBoundedMemory) {
  std::string gz = gzip("name.json.gz", R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")", 'x',
                        size_t(200) << 20, R"(", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]})");
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"analyze", gz}, {"analyze", gz, "--no-cache"}, {"summary", gz}, {"info", gz}}) {
    RunResult r = loupe(args, {.timeout_s = 60});
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(gz + ": at byte 17: an event or value larger than 64 MiB"), std::string::npos) << r.err;
    EXPECT_LT(r.max_rss_kb, 400'000) << "kB to refuse a 200 MB name";
  }
  EXPECT_TRUE(cache_is_empty());
}

// 256 MiB of whitespace between two events, in a few hundred kilobytes of
// gzip: streamed through, never held.
TEST_F(ReadingInputs, AGzipBombIsStreamedInBoundedMemory) {
  std::string event = R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 10, "dur": 5})";
  std::string gz = gzip("bomb.json.gz", R"({"traceEvents": [)" + event + ",", ' ', size_t(256) << 20, event + "]}");
  ASSERT_LT(fs::file_size(gz), 2u << 20);
  RunResult r = loupe({"summary", gz, "--json"}, {.timeout_s = 120});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("count": 2.0)"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_LT(r.max_rss_kb, 400'000) << "kB to read 256 MiB of whitespace";
}

TEST_F(ReadingInputs, ATenGigabyteFileThatIsNoTraceIsRefusedAtItsFirstByte) {
  std::string big = dir.file("big.json");
  write_file(big, "");
  ASSERT_EQ(::truncate(big.c_str(), off_t(10) << 30), 0);  // sparse: no disk used
  for (const char* command : {"analyze", "summary", "info"}) {
    RunResult r = loupe({command, big}, {.timeout_s = 10});
    EXPECT_FALSE(r.timed_out) << command << " read all of a 10 GB file";
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.err.find(big + ": at byte 0: not JSON"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(cache_is_empty());
}

TEST_F(ReadingInputs, AProfileFolderWithLinkLoopsIsNamedNotWalked) {
  fs::path profile = dir.path() / "logs" / "plugins" / "profile";
  fs::create_directories(profile / "2026_01_01_00_00_00");
  fs::create_directory_symlink("..", profile / "2026_09_09_09_09_09");  // a run that is the folder above
  fs::create_symlink("loop", profile / "loop");                         // ELOOP
  fs::create_symlink("nowhere", profile / "2026_12_12_12_12_12");       // dangling
  RunResult r = loupe({"analyze", (dir.path() / "logs").string()}, {.timeout_s = 10});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("a JAX profile folder with no run holding a trace"), std::string::npos) << r.err;
  // A run with a trace among them is read.
  write_file((profile / "2026_01_01_00_00_00" / "host.trace.json.gz").string(),
             R"({"traceEvents": [{"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]})");
  RunResult ok = loupe({"info", (dir.path() / "logs").string()}, {.timeout_s = 10});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("events     1\n"), std::string::npos) << ok.out;
}

TEST_F(ReadingInputs, AProfileRunOfAHundredThousandFilesIsRefusedNotListedWithoutEnd) {
  fs::path run = dir.path() / "plugins" / "profile" / "2026_01_01_00_00_00";
  fs::create_directories(run);
  for (int i = 0; i <= 100'000; ++i) {
    int fd = ::open((run / fmt::format("f{}", i)).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  RunResult r = loupe({"analyze", (dir.path() / "plugins" / "profile").string()}, {.timeout_s = 30});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("holds more than 100000 entries"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loupe::hostile
