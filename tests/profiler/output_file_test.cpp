// OutputFile: the new content replaces the target only when complete, and
// nothing else is ever touched.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "loupe/prof/output_file.h"
#include "test_files.h"

using namespace loupe::prof;

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFile, TheTargetChangesOnlyAtCommit) {
  loupe::test::TempDir dir;
  std::string path = dir.file("out.txt");
  std::ofstream(path) << "old";
  ::chmod(path.c_str(), 0640);
  {
    OutputFile out(path);
    std::fputs("new", out.stream());
    std::fflush(out.stream());
    EXPECT_EQ(read(path), "old") << "not before commit";
    EXPECT_EQ(names_in(dir.path()).size(), 2u) << "the temporary file sits beside it";
    out.commit();
  }
  EXPECT_EQ(read(path), "new");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.txt"});
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u) << "a replaced file keeps its permissions";
}

TEST(OutputFile, AnAbandonedOutputLeavesTheTargetAndNoTemporaryFile) {
  loupe::test::TempDir dir;
  std::string path = dir.file("out.txt");
  std::ofstream(path) << "old";
  {
    OutputFile out(path);
    std::fputs("half", out.stream());
    std::ofstream(out.temp_path() + "-wal") << "sqlite's";
  }
  EXPECT_EQ(read(path), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.txt"});
}

TEST(OutputFile, SqliteFilesOfTheOldContentGoWithIt) {
  loupe::test::TempDir dir;
  std::string path = dir.file("t.db");
  for (const char* f : {"", "-wal", "-shm", "-journal"}) std::ofstream(path + f) << "old";
  OutputFile out(path);
  out.commit();
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"t.db"});
  EXPECT_EQ(read(path), "");
}

TEST(OutputFile, RefusesWhatIsNotARegularFileAndItsOwnInputs) {
  loupe::test::TempDir dir;
  std::string input = dir.file("in.db"), link = dir.file("link.db");
  std::ofstream(input) << "input";
  std::filesystem::create_symlink(input, link);
  EXPECT_THROW(OutputFile(dir.path().string()), FileError);
  EXPECT_THROW(OutputFile(input, {input}), FileError);
  EXPECT_THROW(OutputFile(link, {input}), FileError);
  EXPECT_THROW(OutputFile(dir.file("missing/out.db")), FileError);
  std::filesystem::create_symlink(dir.file("nowhere"), dir.file("dangling"));
  EXPECT_THROW(check_output_path(dir.file("dangling")), FileError);
  try {
    check_output_path(input, {link});
    FAIL() << "an output that is its own input";
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()),
              input + ": is the same file as the input " + link + "; write the output elsewhere");
  }
  EXPECT_EQ(read(input), "input");
}

}  // namespace
