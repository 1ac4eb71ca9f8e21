// The `loupe` command as a user runs it: output, exit codes, and one clear
// line on stderr for every kind of bad input.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "loupe/prof/trace_format.h"
#include "profiler/test_files.h"
#include "run_command.h"

namespace {

using loupe::test::run_command;

class Cli : public ::testing::Test {
 protected:
  loupe::test::TempDir dir;
  loupe::test::CommandResult loupe(std::vector<std::string> args) {
    args.insert(args.begin(), LOUPE_BIN);
    return run_command(args, dir.path().string());
  }
  std::string synth(int events = 20'000) {
    std::string path = dir.file("synth.db");
    auto r = loupe({"synth", "-o", path, "--events", std::to_string(events), "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  }
};

int lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

TEST_F(Cli, InfoShowsVersionProducerCountsDevicesAndDrops) {
  std::string path = synth();
  auto r = loupe({"info", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt::format("format     {}.{} (written by loupe synth)", loupe::prof::kFormatMajor,
                                   loupe::prof::kFormatMinor)),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("status     complete"), std::string::npos);
  EXPECT_NE(r.out.find("started    2026-01-01 00:00:00 UTC"), std::string::npos);
  EXPECT_NE(r.out.find("events     20,000"), std::string::npos);
  EXPECT_NE(r.out.find("dropped    0"), std::string::npos);
  EXPECT_NE(r.out.find("Synthetic GPU 1"), std::string::npos);
  EXPECT_NE(r.out.find("device_ops"), std::string::npos);
  EXPECT_NE(r.out.find("data loader"), std::string::npos);
}

TEST_F(Cli, InfoOfARecordedWorkload) {
  std::string path = dir.file("w.db");
  auto w = run_command({LOUPE_RECORD_WORKLOAD, "--out", path, "--steps", "5"}, dir.path().string());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  auto r = loupe({"info", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("written by record_workload"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("simulated device"), std::string::npos);
  // 5 steps, each with 12 kernels on the stream: counted from the program.
  auto q = loupe({"sql", path, "SELECT count(*) FROM device_ops", "--csv"});
  EXPECT_EQ(q.out, "count(*)\n60\n");
}

TEST_F(Cli, SqlPrintsAnAlignedTableOrCsv) {
  std::string path = synth();
  auto table = loupe({"sql", path, "SELECT id, name FROM devices ORDER BY id"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out, "id  name\n 0  Synthetic GPU 0\n 1  Synthetic GPU 1\n");
  EXPECT_EQ(table.err, "(2 rows)\n");
  auto csv = loupe({"sql", path, "SELECT 'a,b' AS x, NULL AS y, 3 AS z", "--csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out, "x,y,z\n\"a,b\",,3\n");
}

TEST_F(Cli, BadUsageExitsTwoWithOneLine) {
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{},
                                             {"frobnicate"},
                                             {"info"},
                                             {"info", "a", "b"},
                                             {"synth", "--events", "5"},
                                             {"synth", "-o", "x.db", "--events", "0"},
                                             {"synth", "-o", "x.db", "--events", "lots"},
                                             {"info", "--no-such-flag", "x"}}) {
    auto r = loupe(args);
    EXPECT_EQ(r.exit_code, 2) << "args: " << ::testing::PrintToString(args) << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("loupe: "), std::string::npos) << r.err;
  }
}

TEST_F(Cli, HelpOnEveryCommand) {
  for (std::string cmd : {"info", "sql", "synth"}) {
    auto r = loupe({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd << ": " << r.out;
  }
  auto top = loupe({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("synth"), std::string::npos);
}

TEST_F(Cli, BadFilesExitTwoWithOneLineNamingTheFile) {
  std::string missing = dir.file("missing.db");
  std::string random = dir.file("random.db");
  {
    std::ofstream f(random, std::ios::binary);
    for (int i = 0; i < 5000; ++i) f.put(char(i * 7919));
  }
  std::string other = dir.file("other.db");
  {
    sqlite3* db = nullptr;
    sqlite3_open(other.c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  for (const std::string& path : {missing, random, other}) {
    for (std::vector<std::string> args : {std::vector<std::string>{"info", path}}) {
      auto r = loupe(args);
      EXPECT_EQ(r.exit_code, 2) << path;
      EXPECT_EQ(lines(r.err), 1) << r.err;
      EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    }
  }
  auto bad_sql = loupe({"sql", synth(100), "SELECT nonsense FROM"});
  EXPECT_EQ(bad_sql.exit_code, 2);
  EXPECT_EQ(lines(bad_sql.err), 1) << bad_sql.err;
  auto write_sql = loupe({"sql", synth(100), "DROP TABLE meta"});
  EXPECT_EQ(write_sql.exit_code, 2);
  EXPECT_NE(write_sql.err.find("read-only"), std::string::npos);
}

TEST_F(Cli, SynthReportsWhatItWrote) {
  std::string path = dir.file("s.db");
  auto r = loupe({"synth", "-o", path, "--events", "12345", "--seed", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("12,345 events"), std::string::npos) << r.out;
  auto q = loupe({"sql", path, "SELECT value FROM meta WHERE key = 'synth_seed'", "--csv"});
  EXPECT_EQ(q.out, "value\n4\n");
}

TEST_F(Cli, SynthToAnUnwritablePathFails) {
  auto r = loupe({"synth", "-o", "/nonexistent-dir/x.db", "--events", "10"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent-dir/x.db"), std::string::npos) << r.err;
}

class Commands : public Cli {
 protected:
  std::string recorded() {
    std::string path = dir.file("w.db");
    auto w = run_command({LOUPE_RECORD_WORKLOAD, "--out", path, "--steps", "30"}, dir.path().string());
    EXPECT_EQ(w.exit_code, 0) << w.err;
    return path;
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir.file(name);
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(Commands, AnalyzeNamesTheMistakesWithCallSites) {
  std::string path = recorded();
  auto r = loupe({"analyze", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A warning, or an error when compiling took a tenth of the window: how
  // long the five recompiles take depends on the machine (and on ASan).
  EXPECT_TRUE(r.out.find("[warning] recompile") != std::string::npos ||
              r.out.find("[error] recompile") != std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("synchronous device-to-host read at samples/record_workload.cpp:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\033["), std::string::npos) << "no colour when not a terminal";
  auto json = loupe({"analyze", path, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0);
  auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["schema"], 2);
  EXPECT_GE(doc["findings"].size(), 3u);
  EXPECT_EQ(doc["metrics"]["steps"], 30);
  auto md = loupe({"analyze", path, "--format", "markdown", "--rules", "recompile,transfer"});
  ASSERT_EQ(md.exit_code, 0);
  EXPECT_EQ(md.out.rfind("### loupe: 2 findings", 0), 0u) << md.out;
  // Warnings and errors in full, information one line each; --all writes
  // every finding's advice. The run records steps: one steps finding.
  size_t info = 0;
  for (const auto& f : doc["findings"]) info += f["severity"] == "info";
  ASSERT_GE(info, 1u) << json.out;
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(r.out, "\n    -> "), doc["findings"].size() - info) << r.out;
  EXPECT_NE(r.out.find(fmt::format("({} finding{} of information in one line each: --all", info, info == 1 ? "" : "s")),
            std::string::npos)
      << r.out;
  auto all = loupe({"analyze", path, "--all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(count(all.out, "\n    -> "), doc["findings"].size()) << all.out;
  EXPECT_EQ(all.out.find("in one line each"), std::string::npos) << all.out;
}

TEST_F(Commands, AnalyzeRefusesUnknownRulesAndThresholds) {
  std::string path = synth(1000);
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"analyze", path, "--rules", "idle-gap,bogus"},
                                             {"analyze", path, "--set", "no_such=1"},
                                             {"analyze", path, "--set", "min_gap"},
                                             {"analyze", path, "--min-gap", "soon"},
                                             {"analyze", path, "--format", "yaml"}}) {
    auto r = loupe(args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args);
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
  auto missing = loupe({"analyze", dir.file("nope.db")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.db"), std::string::npos);
}

TEST_F(Commands, SummaryTablesAsTextCsvAndJson) {
  std::string path = recorded();
  auto text = loupe({"summary", path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Device operations by name\n  kind    count  total"), std::string::npos) << text.out;
  // Names come last, so a long one leaves the figures in their columns.
  size_t grad_row = text.out.find("  matmul_grad\n");
  ASSERT_NE(grad_row, std::string::npos) << text.out;
  EXPECT_EQ(text.out.rfind("\n  kernel  ", grad_row), text.out.rfind('\n', grad_row)) << text.out;
  EXPECT_NE(text.out.find("time %  name\n"), std::string::npos) << text.out;
  auto csv = loupe({"summary", path, "--csv"});
  ASSERT_EQ(csv.exit_code, 0);
  EXPECT_EQ(csv.out.rfind("# device_ops\nname,kind,count,total,", 0), 0u) << csv.out.substr(0, 80);
  auto json = loupe({"summary", path, "--json"});
  ASSERT_EQ(json.exit_code, 0);
  auto doc = nlohmann::json::parse(json.out);
  // 30 steps x 6 backward kernels each, counted from the program.
  bool found = false;
  for (const auto& row : doc["device_ops"]) {
    if (row["name"] == "matmul_grad") {
      found = true;
      EXPECT_EQ(row["count"], 180);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(Commands, CheckExitCodesAndJUnit) {
  std::string path = recorded();
  std::string strict = write("strict.toml", "recompiles_max = 0\nsync_transfers_per_step_max = 0\n");
  std::string loose = write("loose.toml", "recompiles_max = 1000\nidle_fraction_max = 1.0\n");
  std::string junit = dir.file("junit.xml");
  auto fail = loupe({"check", path, "--budget", strict, "--junit", junit});
  EXPECT_EQ(fail.exit_code, 1) << fail.out << fail.err;
  EXPECT_NE(fail.out.find("FAIL  recompiles_max"), std::string::npos) << fail.out;
  EXPECT_NE(fail.out.find("2 of 2 budgets exceeded"), std::string::npos);
  EXPECT_NE(loupe::test::slurp(junit).find("failures=\"2\""), std::string::npos);
  auto pass = loupe({"check", path, "--budget", loose});
  EXPECT_EQ(pass.exit_code, 0) << pass.out;
  EXPECT_NE(pass.out.find("0 of 2 budgets exceeded"), std::string::npos);
  auto bad = loupe({"check", path, "--budget", write("bad.toml", "recompiles_max = 0\nspeed = 1\n")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("bad.toml:2: unknown budget 'speed'"), std::string::npos) << bad.err;
  auto missing = loupe({"check", path, "--budget", dir.file("none.toml")});
  EXPECT_EQ(missing.exit_code, 2);
}

TEST_F(Commands, DiffPrintsATableAndFailsOnThresholds) {
  std::string a = dir.file("a.db"), b = dir.file("b.db");
  ASSERT_EQ(loupe({"synth", "-o", a, "--events", "20000", "-q"}).exit_code, 0);
  ASSERT_EQ(loupe({"synth", "-o", b, "--events", "40000", "-q"}).exit_code, 0);
  auto same = loupe({"diff", a, a, "--fail-on", "step_time:+0%"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("metrics"), std::string::npos);
  auto more = loupe({"diff", a, b, "--fail-on", "steps:+0"});
  EXPECT_EQ(more.exit_code, 1) << more.out << more.err;
  EXPECT_NE(more.err.find("FAIL --fail-on steps:+0"), std::string::npos) << more.err;
  auto json = loupe({"diff", a, b, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(json.out)["metrics"].size(), 11u);
  auto bad = loupe({"diff", a, b, "--fail-on", "speed:+5%"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(lines(bad.err), 1) << bad.err;
}

// Several runs a side: step times and times by name tested, the JSON
// saying how many runs and which test; a step asked for by number; usage
// mistakes named on one line, exit 2.
TEST_F(Commands, DiffOfSeveralRunsAndOfOneStep) {
  std::string a1 = dir.file("a1.db"), a2 = dir.file("a2.db"), b1 = dir.file("b1.db"), b2 = dir.file("b2.db");
  for (const auto& [path, seed] : {std::pair{a1, "1"}, {a2, "2"}, {b1, "3"}, {b2, "4"}}) {
    ASSERT_EQ(loupe({"synth", "-o", path, "--events", "20000", "--seed", seed, "-q"}).exit_code, 0);
  }
  auto runs = loupe({"diff", "--base", a1, a2, "--head", b1, b2, "--format", "json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  auto doc = nlohmann::json::parse(runs.out);
  EXPECT_EQ(doc["runs"]["base"], 2);
  EXPECT_EQ(doc["test"]["significance"], 0.05);
  EXPECT_TRUE(doc["metrics"][0]["p_value"].is_number()) << doc["metrics"][0];  // step_time
  auto text = loupe({"diff", "--base", a1, a2, "--test", b1, b2});
  EXPECT_NE(text.out.find("2 runs against 2"), std::string::npos) << text.out;
  auto step = loupe({"diff", a1, b1, "--step", "1", "--format", "json"});
  ASSERT_EQ(step.exit_code, 0) << step.err;
  EXPECT_EQ(nlohmann::json::parse(step.out)["step"], 1);
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"diff", a1, b1, "--base", a2, "--head", b2},
                                             {"diff", "--base", a1, a2},
                                             {"diff", a1},
                                             {"diff", a1, b1, "--step", "100000"},
                                             {"diff", "--base", a1, "--head", b1, "--significance", "2"}}) {
    auto r = loupe(bad);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
  EXPECT_NE(loupe({"diff", a1, b1, "--step", "100000"}).err.find("has no step 100000"), std::string::npos);
}

TEST_F(Commands, ExportChromeJson) {
  std::string path = recorded(), out = dir.file("t.json");
  auto r = loupe({"export", path, "--chrome", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(loupe::test::slurp(out));
  EXPECT_GT(doc["traceEvents"].size(), 1000u);
  auto bad = loupe({"export", path, "--chrome", "/nonexistent-dir/t.json"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(lines(bad.err), 1);
}

TEST_F(Cli, CaptureForwardsExitCodesAndSignals) {
  auto probe = loupe({"capture", "-o", dir.file("c.db"), "--", "true"});
  if (probe.err.find("built without the CUDA toolkit") != std::string::npos) {
    GTEST_SKIP() << "built without the CUDA toolkit: no libloupe_inject.so";
  }
  EXPECT_EQ(probe.exit_code, 0) << probe.err;
  auto seven = loupe({"capture", "-o", dir.file("c.db"), "--", "/bin/sh", "-c", "exit 7"});
  EXPECT_EQ(seven.exit_code, 7);
  // A program that never starts CUDA leaves nothing to record, and says so.
  EXPECT_NE(seven.err.find("never initialized CUDA"), std::string::npos) << seven.err;
  auto killed = loupe({"capture", "-o", dir.file("c.db"), "--", "/bin/sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(killed.exit_code, 128 + SIGTERM) << "loupe dies of the same signal";
  auto missing = loupe({"capture", "--", dir.file("no-such-program")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no-such-program"), std::string::npos);
}

}  // namespace

namespace {

// `loupe record` and LOUPE_TRACE: any program built on the runtime records
// itself without code changes.
class Record : public ::testing::Test {
 protected:
  loupe::test::TempDir dir;
  loupe::test::CommandResult run(std::vector<std::string> args) {
    return loupe::test::run_command(args, dir.path().string());
  }
  std::string query(const std::string& path, const std::string& sql) {
    auto r = run({LOUPE_BIN, "sql", path, sql, "--csv"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
};

TEST_F(Record, RunsTheProgramAndPrintsTheTrace) {
  std::string path = dir.file("demo.db");
  auto r = run({LOUPE_BIN, "record", "-o", path, "--", LOUPE_TRAIN_MLP, "--epochs", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("train_step: 2 compiles"), std::string::npos) << r.out;  // the program's own output
  EXPECT_NE(r.out.find("written by train_mlp"), std::string::npos) << r.out;    // then loupe info
  EXPECT_NE(r.out.find("cpu0 compute"), std::string::npos);
  // 2000 samples in batches of 128: 16 steps per epoch, the last ragged.
  EXPECT_EQ(query(path, "SELECT count(*) FROM steps"), "count(*)\n32\n");
  EXPECT_EQ(query(path,
                  "SELECT k.name, c.reason FROM compiles c JOIN compile_kinds k ON k.id = c.kind "
                  "JOIN strings f ON f.id = c.function WHERE f.text = 'train_step' AND k.name = 'miss' "
                  "ORDER BY c.start"),
            "name,reason\nmiss,first compile\n"
            "miss,\"arg 1 `x`: now f32[80,64], before f32[128,64]; arg 2 `y`: now i32[80], before i32[128]\"\n");
  // item() every step: one synchronous implicit read per step, at one line.
  EXPECT_EQ(query(path,
                  "SELECT count(*), count(DISTINCT callsite) FROM transfers WHERE synchronous = 1 AND "
                  "implicit = 1 AND direction = (SELECT id FROM copy_kinds WHERE name = 'DtoH') "
                  "AND callsite IN (SELECT c.id FROM callsites c JOIN strings s ON s.id = c.file "
                  "WHERE s.text LIKE '%train_mlp.cpp')"),
            "count(*),count(DISTINCT callsite)\n33,2\n");  // 32 losses and the final accuracy
  EXPECT_EQ(query(path, "SELECT count(*) > 0 FROM device_ops WHERE stream = 0 AND kind = 0"), "count(*) > 0\n1\n");
  EXPECT_EQ(query(path, "SELECT min(allocated) >= 0, max(reserved) > 0 FROM memory_events"),
            "min(allocated) >= 0,max(reserved) > 0\n1,1\n");
}

TEST_F(Record, ForwardsTheExitCode) {
  std::string path = dir.file("x.db");
  auto bad = run({LOUPE_BIN, "record", "-o", path, "--", LOUPE_TRAIN_MLP, "--epochs", "0"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;  // train_mlp's usage error
  auto sh = run({LOUPE_BIN, "record", "-o", path, "--", "/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(sh.exit_code, 3);
  EXPECT_NE(sh.err.find("without writing"), std::string::npos) << sh.err;
  auto missing = run({LOUPE_BIN, "record", "-o", path, "--", "/no/such/program"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot run"), std::string::npos) << missing.err;
  auto usage = run({LOUPE_BIN, "record", "--", LOUPE_TRAIN_MLP});
  EXPECT_EQ(usage.exit_code, 2);
}

TEST_F(Record, TheEnvironmentVariableAloneRecords) {
  std::string path = dir.file("env.db");
  setenv("LOUPE_TRACE", path.c_str(), 1);
  auto r = run({LOUPE_TRAIN_MLP, "--epochs", "1"});
  unsetenv("LOUPE_TRACE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(query(path, "SELECT value FROM meta WHERE key = 'status'"), "value\ncomplete\n");
  EXPECT_EQ(query(path, "SELECT count(*) FROM steps"), "count(*)\n16\n");
  // Without the variable nothing is written.
  std::string none = dir.file("none.db");
  auto quiet = run({LOUPE_TRAIN_MLP, "--epochs", "1"});
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(none));
}

}  // namespace
