// job.json: reading it defensively (it is a file anyone may have edited)
// and writing it.
#include "job/job_index.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "loupe/prof/input_file.h"
#include "loupe/prof/output_file.h"

namespace loupe::prof {

namespace {

using nlohmann::json;

// An index is a few hundred bytes a rank.
constexpr size_t kMaxIndexBytes = size_t(1) << 30;

std::string index_path(const std::string& dir) { return dir + "/" + kJobIndexName; }

// A rank's trace must be a plain file name in the folder: an index must
// not send a reader elsewhere.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A member of `object` of the given JSON type; throws JobError naming it.
const json& member(const json& object, const char* key, json::value_t type, const std::string& where) {
  auto it = object.find(key);
  bool ok =
      it != object.end() &&
      (it->type() == type || (type == json::value_t::number_integer && it->type() == json::value_t::number_unsigned));
  if (!ok) throw JobError(fmt::format("{}: '{}' is missing or not a {}", where, key, json(type).type_name()));
  return *it;
}

// An optional string member: "" when absent or not a string.
std::string string_or_empty(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

JobRank read_rank(const json& r, const std::string& where) {
  if (!r.is_object()) throw JobError(fmt::format("{}: an entry of 'ranks' is not an object", where));
  JobRank rank;
  rank.rank = member(r, "rank", json::value_t::number_integer, where).get<int64_t>();
  rank.trace = member(r, "trace", json::value_t::string, where).get<std::string>();
  if (!plain_file_name(rank.trace)) {
    throw JobError(
        fmt::format("{}: rank {}'s trace '{}' is not a file name in the job's folder", where, rank.rank, rank.trace));
  }
  rank.source = string_or_empty(r, "source");
  rank.host = string_or_empty(r, "host");
  if (auto it = r.find("events"); it != r.end() && it->is_number_unsigned()) rank.events = it->get<uint64_t>();
  return rank;
}

void check_ranks(const Job& job, const std::string& where) {
  std::vector<bool> seen(size_t(job.world_size), false);
  for (const JobRank& r : job.ranks) {
    if (r.rank < 0 || r.rank >= job.world_size) {
      throw JobError(fmt::format("{}: rank {} is outside a job of {} ranks", where, r.rank, job.world_size));
    }
    if (seen[size_t(r.rank)]) throw JobError(fmt::format("{}: rank {} is listed twice", where, r.rank));
    seen[size_t(r.rank)] = true;
    if (!is_regular_file(job.trace_path(r))) {
      throw JobError(fmt::format("{}: rank {}'s trace {} is missing", where, r.rank, job.trace_path(r)));
    }
  }
}

}  // namespace

std::string Job::trace_path(const JobRank& rank) const { return dir + "/" + rank.trace; }

bool is_job(const std::string& path) { return is_regular_file(index_path(path)); }

Job read_job(const std::string& dir) {
  std::string where = index_path(dir);
  json doc;
  try {
    doc = json::parse(read_small_input_file_or_throw<JobError>(where, kMaxIndexBytes, "a job index"));
  } catch (const json::exception& e) {
    throw JobError(fmt::format("{}: not a job index: {}", where, e.what()));
  }
  if (!doc.is_object() || string_or_empty(doc, "format") != "loupe job") {
    throw JobError(fmt::format("{}: not a loupe job index (no \"format\": \"loupe job\")", where));
  }
  int64_t version = member(doc, "version", json::value_t::number_integer, where).get<int64_t>();
  if (version > kJobFormatVersion) {
    throw JobError(
        fmt::format("{}: job format version {} is newer than this loupe's ({})", where, version, kJobFormatVersion));
  }
  Job job;
  job.dir = dir;
  job.world_size = member(doc, "world_size", json::value_t::number_integer, where).get<int64_t>();
  if (job.world_size < 1 || job.world_size > kMaxJobRanks) {
    throw JobError(fmt::format("{}: world_size {} is not between 1 and {}", where, job.world_size, kMaxJobRanks));
  }
  job.backend = string_or_empty(doc, "backend");
  for (const json& r : member(doc, "ranks", json::value_t::array, where)) job.ranks.push_back(read_rank(r, where));
  std::sort(job.ranks.begin(), job.ranks.end(), [](const JobRank& a, const JobRank& b) { return a.rank < b.rank; });
  check_ranks(job, where);
  job.missing = missing_ranks(job);
  if (auto it = doc.find("failures"); it != doc.end() && it->is_array()) {
    for (const json& f : *it) {
      if (f.is_object()) job.failures.push_back({string_or_empty(f, "source"), string_or_empty(f, "error")});
    }
  }
  return job;
}

std::vector<int64_t> missing_ranks(const Job& job) {
  std::vector<bool> seen(size_t(job.world_size), false);
  for (const JobRank& r : job.ranks) seen[size_t(r.rank)] = true;
  std::vector<int64_t> missing;
  for (size_t r = 0; r < seen.size(); ++r) {
    if (!seen[r]) missing.push_back(int64_t(r));
  }
  return missing;
}

// The folder is created if needed; else it must be empty or a job.
void prepare_folder(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw JobError(fmt::format("{}: cannot create the folder: {}", dir, ec.message()));
    return;
  }
  if (!std::filesystem::is_directory(dir, ec)) throw JobError(fmt::format("{}: is not a folder", dir));
  if (!is_job(dir) && !std::filesystem::is_empty(dir, ec)) {
    throw JobError(
        fmt::format("{}: is neither empty nor a job: a job is written into an empty folder or over a job", dir));
  }
}

// Removes the traces of the job the folder held, if any.
void remove_previous_job(const std::string& dir) {
  if (!is_job(dir)) return;
  std::error_code ec;
  try {
    Job old = read_job(dir);
    for (const JobRank& r : old.ranks) std::filesystem::remove(old.trace_path(r), ec);
  } catch (const JobError&) {
    // A damaged index: its traces stay; the new job's files replace theirs.
  }
}

void write_job_index(const Job& job) {
  using ordered = nlohmann::ordered_json;  // the keys in the order docs/trace-format.md gives them
  ordered doc = {{"format", "loupe job"},
                 {"version", kJobFormatVersion},
                 {"world_size", job.world_size},
                 {"backend", job.backend}};
  ordered ranks = ordered::array(), failures = ordered::array();
  for (const JobRank& r : job.ranks) {
    ranks.push_back(
        {{"rank", r.rank}, {"trace", r.trace}, {"source", r.source}, {"host", r.host}, {"events", r.events}});
  }
  for (const JobFailure& f : job.failures) failures.push_back({{"source", f.source}, {"error", f.error}});
  doc["ranks"] = std::move(ranks);
  doc["missing"] = job.missing;
  doc["failures"] = std::move(failures);
  std::string text = doc.dump(2) + "\n";
  OutputFile out(index_path(job.dir));
  std::fwrite(text.data(), 1, text.size(), out.stream());
  out.commit();
}

}  // namespace loupe::prof
