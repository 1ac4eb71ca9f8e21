// Jobs: traces of the ranks of one distributed run, imported into a folder
// with an index. The real job is tests/fixtures/jobs/gloo-2ranks, two
// torch.distributed ranks on gloo recorded here
// (tests/fixtures/jobs/record_gloo_job.py); each file's rank and the job's
// size are read from its raw JSON by the test, not through loupe.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "error_message.h"
#include "loupe/prof/job.h"
#include "loupe/prof/synth.h"
#include "loupe/prof/trace_query.h"
#include "profiler/test_files.h"
#include "run_command.h"

namespace {

namespace fs = std::filesystem;
using loupe::prof::import_job;
using loupe::prof::Job;
using loupe::prof::JobError;
using loupe::prof::read_job;

const std::string kGloo = LOUPE_JOB_FIXTURES "/gloo-2ranks";

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[65536];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  gzclose(f);
  return out;
}

// The gloo job's files by the rank their raw JSON gives.
std::map<int64_t, std::string> gloo_files_by_rank() {
  std::map<int64_t, std::string> out;
  for (const auto& e : fs::directory_iterator(kGloo)) {
    auto doc = nlohmann::json::parse(gunzip(e.path().string()));
    EXPECT_EQ(doc["distributedInfo"]["world_size"], 2);
    out[doc["distributedInfo"]["rank"].get<int64_t>()] = e.path().string();
  }
  return out;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A minimal Kineto trace: one CPU op, and distributedInfo when given.
std::string kineto(const std::string& distributed) {
  return R"({"schemaVersion": 1, )" + (distributed.empty() ? "" : R"("distributedInfo": )" + distributed + ", ") +
         R"("traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10,
            "dur": 5, "args": {"External id": 1}}]})";
}

std::string error_of(const std::vector<std::string>& sources, const std::string& dir) {
  return loupe::test::error_message<JobError>([&] { import_job(sources, dir); });
}

class Jobs : public ::testing::Test {
 protected:
  loupe::test::TempDir tmp;
};

TEST_F(Jobs, RanksComeFromTheTracesNotTheirNames) {
  std::map<int64_t, std::string> by_rank = gloo_files_by_rank();
  ASSERT_EQ(by_rank.size(), 2u);
  // Given in the order that puts rank 1 first.
  Job job = import_job({by_rank[1], by_rank[0]}, tmp.file("job"));
  EXPECT_TRUE(job.complete());
  EXPECT_EQ(job.world_size, 2);
  EXPECT_EQ(job.backend, "gloo");
  ASSERT_EQ(job.ranks.size(), 2u);
  for (int64_t r = 0; r < 2; ++r) {
    const auto& rank = job.ranks[size_t(r)];
    EXPECT_EQ(rank.rank, r);
    EXPECT_EQ(rank.source, by_rank[r]);
    EXPECT_EQ(rank.trace, "rank-0000" + std::to_string(r) + ".g1.db") << "the folder's first generation";
    loupe::prof::TraceSummary s = loupe::prof::summarize_trace(job.trace_path(rank));
    EXPECT_EQ(s.info.meta.at("rank"), std::to_string(r));
    EXPECT_EQ(s.info.meta.at("world_size"), "2");
    EXPECT_EQ(s.info.meta.at("source_file"), by_rank[r]);
    uint64_t rows = 0;
    for (const auto& c : s.counts) rows += c.rows;
    EXPECT_EQ(rank.events, rows);
  }
  // The index reads back as it was written.
  Job again = read_job(tmp.file("job"));
  EXPECT_EQ(again.world_size, 2);
  ASSERT_EQ(again.ranks.size(), 2u);
  EXPECT_EQ(again.ranks[1].source, by_rank[1]);
  EXPECT_EQ(again.ranks[1].events, job.ranks[1].events);
}

TEST_F(Jobs, WithoutDistributedInfoTheNameGivesTheRankAndTheGapsAreMissing) {
  write(tmp.file("trace_rank-3.json"), kineto(""));
  write(tmp.file("RANK0.json"), kineto(""));
  Job job = import_job({tmp.file("trace_rank-3.json"), tmp.file("RANK0.json")}, tmp.file("job"));
  EXPECT_EQ(job.world_size, 4) << "the highest rank named, plus one";
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[0].rank, 0);
  EXPECT_EQ(job.ranks[1].rank, 3);
  EXPECT_EQ(job.missing, (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(job.complete());
}

TEST_F(Jobs, LoupeTracesJoinAsTheyAre) {
  for (int r = 0; r < 2; ++r) {
    loupe::prof::write_synthetic_trace(tmp.file("rank" + std::to_string(r) + ".db"),
                                       {.events = 5000, .seed = uint64_t(r + 1)});
  }
  Job job = import_job({tmp.file("rank1.db"), tmp.file("rank0.db")}, tmp.file("job"));
  EXPECT_TRUE(job.complete());
  ASSERT_EQ(job.ranks.size(), 2u);
  for (const auto& rank : job.ranks) {
    EXPECT_EQ(rank.events, 5000u) << "synth writes exactly the events asked for";
    EXPECT_EQ(rank.source, tmp.file("rank" + std::to_string(rank.rank) + ".db"));
    EXPECT_EQ(fs::file_size(job.trace_path(rank)), fs::file_size(rank.source)) << "copied as it is";
  }
}

TEST_F(Jobs, SourcesThatCannotBeOneJobAreRefusedAndNothingIsWritten) {
  std::map<int64_t, std::string> gloo = gloo_files_by_rank();
  write(tmp.file("four.json"), kineto(R"({"backend": "gloo", "rank": 1, "world_size": 4})"));
  write(tmp.file("nccl.json"), kineto(R"({"backend": "nccl", "rank": 1, "world_size": 2})"));
  write(tmp.file("beyond.json"), kineto(R"({"backend": "gloo", "rank": 1, "world_size": 1})"));
  write(tmp.file("nameless.json"), kineto(""));
  std::string dir = tmp.file("job");
  EXPECT_EQ(error_of({gloo[0], gloo[0]}, dir), gloo[0] + " and " + gloo[0] + " are both rank 0");
  EXPECT_EQ(
      error_of({gloo[0], tmp.file("four.json")}, dir),
      gloo[0] + " is a rank of a job of 2 ranks but " + tmp.file("four.json") + " of one of 4: they are not one job");
  EXPECT_EQ(error_of({gloo[0], tmp.file("nccl.json")}, dir),
            gloo[0] + " ran on gloo but " + tmp.file("nccl.json") + " on nccl: they are not one job");
  EXPECT_NE(error_of({gloo[0], tmp.file("nameless.json")}, dir).find("nameless.json: cannot tell its rank"),
            std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir)) << "nothing of a refused job is left behind";
  // distributedInfo that contradicts itself is a bad input to the importer:
  // that source fails, the rest is a job.
  Job job = import_job({gloo[0], tmp.file("beyond.json")}, dir);
  ASSERT_EQ(job.failures.size(), 1u);
  EXPECT_NE(job.failures[0].error.find("'distributedInfo' has rank 1 of a world of 1"), std::string::npos)
      << job.failures[0].error;
}

TEST_F(Jobs, ACorruptRankIsAFailureAndTheRestIsWritten) {
  std::map<int64_t, std::string> gloo = gloo_files_by_rank();
  std::string text = gunzip(gloo[1]);
  write(tmp.file("rank1-truncated.json"), text.substr(0, text.size() / 2));
  Job job = import_job({gloo[0], tmp.file("rank1-truncated.json")}, tmp.file("job"));
  ASSERT_EQ(job.ranks.size(), 1u);
  EXPECT_EQ(job.ranks[0].rank, 0);
  EXPECT_EQ(job.missing, (std::vector<int64_t>{1}));
  ASSERT_EQ(job.failures.size(), 1u);
  EXPECT_EQ(job.failures[0].source, tmp.file("rank1-truncated.json"));
  EXPECT_NE(job.failures[0].error.find("rank1-truncated.json"), std::string::npos) << job.failures[0].error;
  Job read = read_job(tmp.file("job"));
  EXPECT_EQ(read.missing, job.missing);
  ASSERT_EQ(read.failures.size(), 1u);
  EXPECT_EQ(read.failures[0].error, job.failures[0].error);
}

TEST_F(Jobs, AJobIsWrittenIntoAnEmptyFolderOrOverAJob) {
  std::map<int64_t, std::string> gloo = gloo_files_by_rank();
  fs::create_directories(tmp.file("busy"));
  write(tmp.file("busy/notes.txt"), "mine");
  EXPECT_NE(error_of({gloo[0]}, tmp.file("busy")).find("it holds notes.txt, which is not part of a job"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(tmp.file("busy/notes.txt")));
  // Over a job of two ranks, a job of rank 1 alone, the folder's second
  // generation: both old traces go.
  std::string dir = tmp.file("job");
  import_job({gloo[0], gloo[1]}, dir);
  ASSERT_TRUE(fs::exists(dir + "/rank-00000.g1.db"));
  Job job = import_job({gloo[1]}, dir);
  EXPECT_EQ(job.generation, 2);
  EXPECT_EQ(job.missing, (std::vector<int64_t>{0}));
  EXPECT_FALSE(fs::exists(dir + "/rank-00000.g1.db"));
  EXPECT_FALSE(fs::exists(dir + "/rank-00001.g1.db"));
  EXPECT_TRUE(fs::exists(dir + "/rank-00001.g2.db"));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 2u) << "the index and rank 1's trace, no temporary left";
}

std::string read_error(const std::string& dir) {
  return loupe::test::error_message<JobError>([&] { read_job(dir); });
}

TEST_F(Jobs, AnIndexIsReadDefensively) {
  std::map<int64_t, std::string> gloo = gloo_files_by_rank();
  std::string dir = tmp.file("job"), index = dir + "/job.json";
  import_job({gloo[0], gloo[1]}, dir);
  auto good = nlohmann::json::parse(std::ifstream(index));
  auto with = [&](auto edit) {
    nlohmann::json doc = good;
    edit(doc);
    write(index, doc.dump());
    return read_error(dir);
  };
  EXPECT_NE(with([](auto& d) { d["ranks"][1]["trace"] = "../../etc/passwd"; }).find("is not a file name in the job"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d["ranks"][1]["rank"] = 0; }).find("rank 0 is listed twice"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d["ranks"][1]["rank"] = 5; }).find("rank 5 is outside a job of 2 ranks"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d["ranks"][1]["trace"] = "rank-00009.db"; }).find("rank-00009.db is missing"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) {
              d["ranks"][1]["trace"] = d["ranks"][0]["trace"];
            }).find("ranks 0 and 1 both name the trace rank-00000.g1.db"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d["world_size"] = "two"; }).find("'world_size' is missing or not a number"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d["version"] = 99; }).find("newer than this loupe's"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.erase("format"); }).find("not a loupe job index"), std::string::npos);
  write(index, "{\"format\": \"loupe job\", ");
  EXPECT_NE(read_error(dir).find("not a job index"), std::string::npos);
  EXPECT_NE(read_error(tmp.file("nowhere")).find("cannot open"), std::string::npos);
}

TEST_F(Jobs, TheCliImportsAJobAndSaysWhatItLacks) {
  std::map<int64_t, std::string> gloo = gloo_files_by_rank();
  std::string dir = tmp.file("job");
  auto loupe = [&](std::vector<std::string> args) {
    args.insert(args.begin(), LOUPE_BIN);
    return loupe::test::run_command(args, tmp.path().string());
  };
  auto ok = loupe({"import", gloo[1], gloo[0], "-o", dir});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("imported a job of 2 ranks (gloo)"), std::string::npos) << ok.out;
  auto info = loupe({"info", dir});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("(2 ranks, gloo)"), std::string::npos) << info.out;
  auto partial = loupe({"import", "--job", gloo[1], "-o", dir, "-q"});
  EXPECT_EQ(partial.exit_code, 1) << "a job lacking a rank is written, and fails";
  EXPECT_EQ(partial.err, "loupe: the job lacks 1 of its 2 ranks: rank 0\n");
  auto dup = loupe({"import", gloo[0], gloo[0], "-o", dir});
  EXPECT_EQ(dup.exit_code, 2);
  EXPECT_EQ(dup.err, "loupe: " + gloo[0] + " and " + gloo[0] + " are both rank 0\n");
  auto no_out = loupe({"import", gloo[0], gloo[1]});
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_NE(no_out.err.find("-o FOLDER"), std::string::npos);
}

}  // namespace
