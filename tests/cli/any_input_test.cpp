// Every reading command on every kind of input: another profiler's trace
// read in memory must give, byte for byte, what the same command gives on
// the trace `loupe import` makes of it (the paths named aside), with the
// cache of imported traces off, cold and warm; a JAX profile folder reads
// its newest run, several hosts as a job; a file loupe cannot read is
// named with what to do; a damaged or unusable cache is rebuilt or gone
// around, never trusted.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "import/nsys_export_writer.h"
#include "loupe/prof/job.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"
#include "run_command.h"

namespace {

namespace fs = std::filesystem;
using loupe::test::CommandResult;
using loupe::test::run_command;

const std::string kProfileRun = "plugins/profile/2026_01_02_11_30_00";

class AnyInput : public ::testing::Test {
 protected:
  void SetUp() override { setenv("LOUPE_CACHE_DIR", cache().c_str(), 1); }
  void TearDown() override { unsetenv("LOUPE_CACHE_DIR"); }
  std::string cache() const { return dir.file("cache"); }

  CommandResult loupe(std::vector<std::string> args) {
    args.insert(args.begin(), LOUPE_BIN);
    return run_command(args, dir.path().string());
  }
  // stdout of a command that must succeed, with `path` (the file read)
  // and `input` (the path given, when another) named as TRACE.
  std::string output(const std::vector<std::string>& args, const std::string& path, const std::string& input = "") {
    CommandResult r = loupe(args);
    EXPECT_EQ(r.exit_code, 0) << fmt::format("{}", fmt::join(args, " ")) << ": " << r.err;
    return input.empty() ? named_trace(r.out, path) : named_trace(named_trace(r.out, path), input);
  }
  static std::string named_trace(std::string text, const std::string& path) {
    for (size_t at = text.find(path); at != std::string::npos; at = text.find(path, at + 5)) {
      text.replace(at, path.size(), "TRACE");
    }
    return text;
  }
  static std::string file_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  // The outputs of summary (text and JSON), analyze --format json, export
  // and check of `input`, as `read` (the file its model names) is named.
  std::vector<std::string> outputs(const std::string& input, const std::string& read,
                                   const std::vector<std::string>& flags) {
    auto with = [&](std::vector<std::string> args) {
      args.insert(args.end(), flags.begin(), flags.end());
      return args;
    };
    std::string exported = dir.file("export.json");
    std::vector<std::string> out = {
        output(with({"summary", input}), read, input),
        output(with({"summary", input, "--json"}), read, input),
        output(with({"analyze", input, "--format", "json"}), read, input),
        output(with({"diff", input, input, "--format", "json"}), read, input),
    };
    CommandResult check = loupe(with({"check", input, "--budget", budget()}));
    out.push_back(fmt::format("exit {}\n{}", check.exit_code, named_trace(named_trace(check.out, read), input)));
    output(with({"export", input, "--chrome", exported}), read, input);
    out.push_back(named_trace(file_text(exported), read));
    return out;
  }
  std::string budget() {
    std::string path = dir.file("budget.toml");
    if (!fs::exists(path)) std::ofstream(path) << "idle_fraction_max = 0.5\nrecompiles_max = 1\n";
    return path;
  }

  // `input` read directly, with the cache off, cold and warm, gives what
  // the trace imported from `read` gives.
  void expect_as_imported(const std::string& input, const std::string& read) {
    SCOPED_TRACE(input);
    std::string db = dir.file("imported.db");
    CommandResult imported = loupe({"import", read, "-o", db, "--quiet"});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    std::vector<std::string> expected = outputs(db, db, {});
    fs::remove_all(cache());
    EXPECT_EQ(outputs(input, read, {"--no-cache"}), expected) << "without the cache";
    EXPECT_FALSE(fs::exists(cache())) << "--no-cache wrote the cache";
    EXPECT_EQ(outputs(input, read, {}), expected) << "the first read, which fills the cache";
    EXPECT_EQ(cached_traces(), 1u);
    EXPECT_EQ(outputs(input, read, {}), expected) << "read from the cache";
  }
  size_t cached_traces() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(cache())) n += e.path().extension() == ".db";
    return n;
  }
  std::string nsys_export() {
    std::string path = dir.file("report.sqlite");
    loupe::test::write_small_nsys_export(path);
    return path;
  }
  loupe::test::TempDir dir;
};

TEST_F(AnyInput, KinetoJsonReadsAsItsImportedTrace) {
  expect_as_imported(LOUPE_REPO_FIXTURES "/kineto/cpu_mlp_train.json.gz",
                     LOUPE_REPO_FIXTURES "/kineto/cpu_mlp_train.json.gz");
  std::string gpu = LOUPE_FIXTURES_DIR "/a100_alexnet.json.gz";
  if (!fs::exists(gpu)) GTEST_SKIP() << gpu << " is absent";
  expect_as_imported(gpu, gpu);
}

TEST_F(AnyInput, JaxJsonNsysExportSnapshotAndPprofReadAsTheirImportedTraces) {
  expect_as_imported(LOUPE_IMPORT_FIXTURES "/jax_cpu_recompile.json.gz",
                     LOUPE_IMPORT_FIXTURES "/jax_cpu_recompile.json.gz");
  std::string nsys = nsys_export();
  expect_as_imported(nsys, nsys);
  expect_as_imported(LOUPE_REPO_FIXTURES "/torch_memory/cpu_mlp_snapshot.pickle.gz",
                     LOUPE_REPO_FIXTURES "/torch_memory/cpu_mlp_snapshot.pickle.gz");
  expect_as_imported(LOUPE_REPO_FIXTURES "/jax_memory/cpu_profile.prof",
                     LOUPE_REPO_FIXTURES "/jax_memory/cpu_profile.prof");
}

// The fixture's folder holds two runs; the newer has 493 events (counted
// in its JSON: `loupe import` of it writes 493 rows), the older 396.
TEST_F(AnyInput, AJaxProfileFolderReadsItsNewestRun) {
  std::string folder = LOUPE_REPO_FIXTURES "/jax_profile";
  std::string newest = folder + "/" + kProfileRun + "/host0.trace.json.gz";
  expect_as_imported(folder, newest);
  CommandResult r = loupe({"info", folder + "/plugins/profile"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("events     493\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("holds 2 profile runs; reading the newest with a trace, 2026_01_02_11_30_00"), std::string::npos)
      << r.err;
}

// jax.profiler may leave only the XPlane of a host (no JSON beside it).
TEST_F(AnyInput, AProfileRunWithOnlyAnXplaneReadsIt) {
  fs::path run = dir.path() / "logs" / "plugins" / "profile" / "2026_05_01_09_00_00";
  fs::create_directories(run);
  std::string xplane = LOUPE_REPO_FIXTURES "/jax_profile/" + kProfileRun + "/host0.xplane.pb";
  fs::copy_file(xplane, run / "host0.xplane.pb");
  expect_as_imported((dir.path() / "logs").string(), (run / "host0.xplane.pb").string());
  CommandResult r = loupe({"info", (dir.path() / "logs").string()});
  EXPECT_NE(r.out.find("events     493\n"), std::string::npos) << r.out;
}

TEST_F(AnyInput, AProfileRunOfSeveralHostsIsAJobOfOneRankEach) {
  fs::path run = dir.path() / "logs" / "plugins" / "profile" / "2026_05_01_09_00_00";
  fs::create_directories(run);
  std::string host = LOUPE_REPO_FIXTURES "/jax_profile/" + kProfileRun + "/host0.trace.json.gz";
  fs::copy_file(host, run / "worker-a.trace.json.gz");
  fs::copy_file(host, run / "worker-b.trace.json.gz");
  for (const char* flag : {"--no-cache", ""}) {
    std::vector<std::string> args = {"info", (dir.path() / "logs").string()};
    if (*flag) args.push_back(flag);
    CommandResult r = loupe(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("(2 ranks)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("worker-a.trace.json.gz"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("worker-b.trace.json.gz"), std::string::npos) << r.out;
    CommandResult a = loupe({"analyze", (dir.path() / "logs").string(), "--format", "json"});
    EXPECT_EQ(a.exit_code, 0) << a.err;
  }
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
    EXPECT_FALSE(e.path().filename().string().starts_with("loupe-job-")) << e.path() << " was left behind";
  }
}

TEST_F(AnyInput, FilesItCannotReadAreNamedWithWhatToDo) {
  auto message = [&](const std::string& path) {
    CommandResult r = loupe({"analyze", path});
    EXPECT_EQ(r.exit_code, 2) << path;
    return r.err;
  };
  std::string rep = dir.file("run.nsys-rep");
  std::ofstream(rep) << "NSYS binary";
  EXPECT_NE(message(rep).find("an Nsight Systems report (.nsys-rep); export it with `nsys export --type sqlite"),
            std::string::npos);
  EXPECT_NE(message(LOUPE_BIN).find("a program, not a trace; record what it does with `loupe record"),
            std::string::npos);
  EXPECT_NE(message(dir.path().string()).find("is a directory, not a regular file, and neither a job's folder"),
            std::string::npos);
  EXPECT_NE(message(dir.file("missing.json")).find("missing.json: cannot open: No such file or directory"),
            std::string::npos);
  std::string text = dir.file("notes.txt");
  std::ofstream(text) << "hello";
  EXPECT_NE(message(text).find("notes.txt: at byte 0: not JSON, nor any other file loupe reads"), std::string::npos);
  EXPECT_FALSE(fs::exists(cache()) && !fs::is_empty(cache())) << "a file that is no trace entered the cache";
  // `loupe sql` queries loupe trace files alone, and says how to make one.
  std::string json = LOUPE_REPO_FIXTURES "/kineto/cpu_mlp_train.json.gz";
  CommandResult sql = loupe({"sql", json, "SELECT 1"});
  EXPECT_EQ(sql.exit_code, 2);
  EXPECT_NE(sql.err.find("not a loupe trace file; `loupe sql` queries one: `loupe import " + json + " -o trace.db`"),
            std::string::npos)
      << sql.err;
}

TEST_F(AnyInput, ADamagedCacheEntryIsRebuiltNeverTrusted) {
  std::string trace = LOUPE_REPO_FIXTURES "/kineto/cpu_mlp_train.json.gz";
  std::string expected = output({"analyze", trace, "--format", "json", "--no-cache"}, trace);
  EXPECT_EQ(output({"analyze", trace, "--format", "json"}, trace), expected);
  ASSERT_EQ(cached_traces(), 1u);
  fs::path entry = fs::directory_iterator(cache())->path();
  for (const std::string& damage : {std::string("not a trace"), file_text(entry).substr(0, 8192)}) {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << damage;
    EXPECT_EQ(output({"analyze", trace, "--format", "json"}, trace), expected) << "after damage";
    EXPECT_NO_THROW(loupe::prof::load_trace(entry.string())) << "the entry was not rebuilt";
  }
}

TEST_F(AnyInput, AnUnusableCacheIsSaidAndTheTraceStillRead) {
  std::string trace = LOUPE_REPO_FIXTURES "/kineto/cpu_mlp_train.json.gz";
  std::string expected = output({"summary", trace, "--no-cache"}, trace);
  std::string file = dir.file("a-file");
  std::ofstream(file) << "x";
  setenv("LOUPE_CACHE_DIR", file.c_str(), 1);
  CommandResult r = loupe({"summary", trace});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(named_trace(r.out, trace), expected);
  EXPECT_NE(r.err.find("the cache of imported traces cannot be used (" + file + ": cannot create: Not a directory)"),
            std::string::npos)
      << r.err;
}

TEST_F(AnyInput, TheCacheKeepsItsCapDroppingTheLeastRecentlyUsed) {
  // A person's own trace in the folder is not the cache's to remove.
  fs::create_directories(cache());
  std::string mine = cache() + "/mine.db";
  std::ofstream(mine) << "a trace of mine";
  setenv("LOUPE_CACHE_MAX_MB", "0", 1);
  std::string a = LOUPE_REPO_FIXTURES "/kineto/cpu_mlp_train.json.gz";
  std::string b = LOUPE_IMPORT_FIXTURES "/jax_cpu_recompile.json.gz";
  output({"summary", a}, a);
  output({"summary", b}, b);
  unsetenv("LOUPE_CACHE_MAX_MB");
  EXPECT_TRUE(fs::exists(mine)) << "the cap removed a file that is not the cache's";
  fs::remove(mine);
  ASSERT_EQ(cached_traces(), 1u) << "a cap of 0 keeps only the entry just written";
  EXPECT_NE(fs::directory_iterator(cache())->path().string().find(fmt::format("-{}-", fs::file_size(b))),
            std::string::npos);
  CommandResult bad = [&] {
    setenv("LOUPE_CACHE_MAX_MB", "lots", 1);
    CommandResult r = loupe({"summary", a});
    unsetenv("LOUPE_CACHE_MAX_MB");
    return r;
  }();
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("LOUPE_CACHE_MAX_MB is 'lots', not a number of mebibytes"), std::string::npos) << bad.err;
}

}  // namespace
