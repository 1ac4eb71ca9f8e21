// job.json: reading it defensively (it is a file anyone may have edited)
// and writing its text.
#include "job/job_index.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "files/file_kind.h"
#include "loupe/prof/input_file.h"
#include "loupe/prof/safe_text.h"

namespace loupe::prof {

namespace {

using nlohmann::json;

// An index is a few hundred bytes a rank.
constexpr size_t kMaxIndexBytes = size_t(1) << 30;
// A generation beyond this is no count of writes: the index was edited.
constexpr int64_t kMaxGeneration = int64_t(1) << 53;

// A rank's trace must be a plain file name in the folder: an index must
// not send a reader elsewhere.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
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

// An integer member within [low, high]; throws JobError naming it.
int64_t bounded(const json& object, const char* key, int64_t low, int64_t high, const std::string& where) {
  const json& v = member(object, key, json::value_t::number_integer, where);
  bool ok = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(high) : v.get<int64_t>() >= low;
  int64_t value =
      v.is_number_unsigned() ? int64_t(std::min<uint64_t>(v.get<uint64_t>(), uint64_t(INT64_MAX))) : v.get<int64_t>();
  if (!ok || value < low || value > high) {
    throw JobError(fmt::format("{}: '{}' is {}, not between {} and {}", where, key, v.dump(), low, high));
  }
  return value;
}

// An optional string member: "" when absent or not a string.
std::string string_or_empty(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

JobRank read_rank(const json& r, int64_t world_size, const std::string& where) {
  if (!r.is_object()) throw JobError(fmt::format("{}: an entry of 'ranks' is not an object", where));
  JobRank rank;
  rank.rank = member(r, "rank", json::value_t::number_integer, where).get<int64_t>();
  if (rank.rank < 0 || rank.rank >= world_size) {
    throw JobError(fmt::format("{}: rank {} is outside a job of {} ranks", where, rank.rank, world_size));
  }
  rank.trace = member(r, "trace", json::value_t::string, where).get<std::string>();
  if (!plain_file_name(rank.trace)) {
    throw JobError(fmt::format("{}: rank {}'s trace '{}' is not a file name in the job's folder", where, rank.rank,
                               printable(rank.trace, kTextNameLimit)));
  }
  rank.source = string_or_empty(r, "source");
  rank.host = string_or_empty(r, "host");
  if (auto it = r.find("events"); it != r.end() && it->is_number_unsigned()) rank.events = it->get<uint64_t>();
  return rank;
}

// Each rank once, each trace named once.
void check_unique(const Job& job, const std::string& where) {
  std::vector<bool> seen(size_t(job.world_size), false);
  std::map<std::string_view, int64_t> named;
  for (const JobRank& r : job.ranks) {
    if (seen[size_t(r.rank)]) throw JobError(fmt::format("{}: rank {} is listed twice", where, r.rank));
    seen[size_t(r.rank)] = true;
    auto [it, inserted] = named.emplace(r.trace, r.rank);
    if (!inserted) {
      throw JobError(fmt::format("{}: ranks {} and {} both name the trace {}", where, it->second, r.rank,
                                 printable(r.trace, kTextNameLimit)));
    }
  }
}

}  // namespace

std::string index_path(const std::string& dir) { return dir + "/" + kJobIndexName; }

std::string Job::trace_path(const JobRank& rank) const { return dir + "/" + rank.trace; }

bool is_job(const std::string& path) {
  struct stat st {};
  return ::stat(index_path(path).c_str(), &st) == 0;
}

Job parse_job_index(const std::string& text, const std::string& dir) {
  std::string where = printable(index_path(dir));
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw JobError(fmt::format("{}: not a job index: {}", where, printable(e.what())));
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
  if (doc.contains("generation")) job.generation = bounded(doc, "generation", 1, kMaxGeneration, where);
  job.world_size = bounded(doc, "world_size", 1, kMaxJobRanks, where);
  job.backend = string_or_empty(doc, "backend");
  for (const json& r : member(doc, "ranks", json::value_t::array, where)) {
    job.ranks.push_back(read_rank(r, job.world_size, where));
  }
  std::sort(job.ranks.begin(), job.ranks.end(), [](const JobRank& a, const JobRank& b) { return a.rank < b.rank; });
  check_unique(job, where);
  job.missing = missing_ranks(job);
  if (auto it = doc.find("failures"); it != doc.end() && it->is_array()) {
    for (const json& f : *it) {
      if (f.is_object()) job.failures.push_back({string_or_empty(f, "source"), string_or_empty(f, "error")});
    }
  }
  return job;
}

void check_traces(const Job& job) {
  std::string where = printable(index_path(job.dir));
  std::map<std::pair<dev_t, ino_t>, const JobRank*> files;
  for (const JobRank& r : job.ranks) {
    std::string path = printable(job.trace_path(r), kTextNameLimit);
    struct stat st {};
    if (::lstat(job.trace_path(r).c_str(), &st) != 0) {
      throw JobError(fmt::format("{}: rank {}'s trace {} is missing", where, r.rank, path));
    }
    if (!S_ISREG(st.st_mode)) {
      throw JobError(fmt::format("{}: rank {}'s trace {} is {}, not a regular file in the job's folder", where, r.rank,
                                 path, files::file_kind(st.st_mode)));
    }
    auto [it, inserted] = files.emplace(std::pair(st.st_dev, st.st_ino), &r);
    if (!inserted) {
      throw JobError(fmt::format("{}: ranks {} and {} name one file ({} and {})", where, it->second->rank, r.rank,
                                 printable(it->second->trace, kTextNameLimit), printable(r.trace, kTextNameLimit)));
    }
  }
}

std::string read_index_text(const std::string& dir) {
  return read_small_input_file_or_throw<JobError>(index_path(dir), kMaxIndexBytes, "a job index");
}

Job read_job(const std::string& dir) {
  // An index replaced between its read and the look at its traces (the
  // old traces go once the new index is in place) is read again.
  constexpr int kAttempts = 3;
  std::string text = read_index_text(dir);
  for (int attempt = 1;; ++attempt) {
    Job job = parse_job_index(text, dir);
    try {
      check_traces(job);
      return job;
    } catch (const JobError&) {
      std::string now = read_index_text(dir);
      if (now == text || attempt == kAttempts) throw;
      text = std::move(now);
    }
  }
}

bool job_replaced(const Job& job) {
  try {
    return parse_job_index(read_index_text(job.dir), job.dir).generation != job.generation;
  } catch (const JobError&) {
    return true;  // gone or unreadable: not the index the job was read from
  }
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

std::string ranks_label(const std::vector<int64_t>& ranks) {
  if (ranks.size() == 1) return fmt::format("rank {}", ranks[0]);
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (j - i >= 2) {
      parts.push_back(fmt::format("{}-{}", ranks[i], ranks[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(std::to_string(ranks[k]));
    }
    i = j + 1;
  }
  std::string out = "ranks ";
  for (size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  return out;
}

std::string job_index_text(const Job& job) {
  using ordered = nlohmann::ordered_json;  // the keys in the order docs/trace-format.md gives them
  ordered doc = {{"format", "loupe job"},
                 {"version", kJobFormatVersion},
                 {"generation", job.generation},
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
  // A source's name or error may hold bytes that are not UTF-8: each is
  // written as U+FFFD rather than refused.
  return doc.dump(2, ' ', false, ordered::error_handler_t::replace) + "\n";
}

}  // namespace loupe::prof
