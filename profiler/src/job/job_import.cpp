// import_job: one source per rank into a job's folder. The sources are
// imported in parallel, one per core, each on one thread, under staging
// names of the new generation (a loupe trace is copied as it is); only
// once they are known to form one job do they take their ranks' names,
// and the index is written (JobWrite, job_folder.h).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>

#include "job/job_folder.h"
#include "job/job_index.h"
#include "loupe/prof/input_file.h"
#include "loupe/prof/job.h"
#include "loupe/prof/output_file.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_query.h"
#include "loupe/prof/trace_reader.h"

namespace loupe::prof {

namespace {

namespace fs = std::filesystem;

// One source, imported (or not).
struct Imported {
  std::string source;
  std::string staged;  // its trace's staging name in the folder
  std::optional<ImportResult> result;
  std::string error;  // why it could not be read
};

// The rank a file's name gives: "rank3.json", "trace_rank-12.json.gz",
// "RANK_7.pt.trace.json".
std::optional<int64_t> rank_in_name(const std::string& path) {
  static const std::regex pattern(R"((?:^|[^a-z0-9])rank[-_]?([0-9]{1,7})(?:[^0-9]|$))", std::regex::icase);
  std::string name = fs::path(path).filename().string();
  std::smatch m;
  if (!std::regex_search(name, m, pattern)) return std::nullopt;
  return std::stoll(m[1].str());
}

// A loupe trace: SQLite ("SQLite format 3\0" in bytes 0-15) with loupe's
// application id in bytes 68-71, big-endian (docs/trace-format.md).
bool is_loupe_trace(const std::string& path) {
  int fd = open_input_file_or_throw<ImportError>(path);
  unsigned char head[72];
  ssize_t n = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  if (n != ssize_t(sizeof head) || std::memcmp(head, "SQLite format 3", 16) != 0) return false;
  uint32_t id = uint32_t(head[68]) << 24 | uint32_t(head[69]) << 16 | uint32_t(head[70]) << 8 | head[71];
  return int32_t(id) == kApplicationId;
}

// Copies `source` to `dest` through loupe's output gate. A failed read is
// the source's (ImportError), a failed write the folder's (FileError).
void copy_file(const std::string& source, const std::string& dest) {
  int in = open_input_file_or_throw<ImportError>(source);
  OutputFile out(dest);
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(in);
      throw ImportError(fmt::format("{}: cannot read: {}", source, std::strerror(err)));
    }
    if (n == 0) break;
    if (std::fwrite(buf, 1, size_t(n), out.stream()) != size_t(n)) {
      ::close(in);
      throw FileError(fmt::format("{}: cannot write: {}", dest, std::strerror(errno)));
    }
  }
  ::close(in);
  out.commit();
}

// A loupe trace joins the job as it is: checked, copied, its rank from its
// meta rows.
ImportResult take_loupe_trace(const std::string& source, const std::string& dest) {
  TraceSummary s;
  try {
    s = summarize_trace(source);
  } catch (const TraceError& e) {
    throw ImportError(e.what());  // a damaged source: that source fails
  }
  ImportResult r;
  for (const TableCount& c : s.counts) r.rows_written += c.rows;
  take_distributed_meta(s.info.meta, r);
  copy_file(source, dest);
  return r;
}

// Imports every source into a staging file of `w`. A source that cannot be
// read is that source's failure; a file that cannot be written (a full
// disk) stops the whole import, and is thrown once the workers stop.
std::vector<Imported> import_all(const std::vector<std::string>& sources, JobWrite& w,
                                 const JobImportOptions& options) {
  std::vector<Imported> out(sources.size());
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr fatal;
  auto work = [&] {
    for (size_t i = next++; i < sources.size(); i = next++) {
      Imported& m = out[i];
      m.source = sources[i];
      m.staged = w.staging_name(i);
      try {
        std::string dest = w.add_file(m.staged);
        m.result = is_loupe_trace(m.source) ? take_loupe_trace(m.source, dest)
                                            : import_trace(m.source, dest, {.format = options.format, .threads = 1});
      } catch (const ImportError& e) {
        m.error = e.what();
      } catch (...) {
        std::lock_guard lock(mu);
        if (!fatal) fatal = std::current_exception();
        next = sources.size();
      }
    }
  };
  unsigned workers = options.workers != 0 ? options.workers : std::max(1u, std::thread::hardware_concurrency());
  workers = unsigned(std::min<size_t>(workers, sources.size()));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (fatal) std::rethrow_exception(fatal);
  return out;
}

// `place`: the source's place in the list, when that is its rank.
int64_t rank_of(const Imported& m, std::optional<int64_t> place) {
  std::optional<int64_t> r = m.result->rank >= 0 ? m.result->rank : place ? place : rank_in_name(m.source);
  if (r && *r >= kMaxJobRanks) {
    throw JobError(fmt::format("{} is rank {}, beyond the {} ranks a job may have", m.source, *r, kMaxJobRanks));
  }
  if (r) return *r;
  throw JobError(fmt::format(
      "{}: cannot tell its rank: the trace has no distributedInfo (PyTorch's profiler writes one in a distributed "
      "run) and its name holds no rank number (such as rank3.json)",
      m.source));
}

// What the imported sources say of the job they come from; throws JobError
// when they cannot be one job.
struct JobShape {
  int64_t world_size = -1;
  std::string backend;
  const Imported* sized_by = nullptr;  // the source that gave world_size
  const Imported* backend_by = nullptr;
};

JobShape job_shape(const std::vector<Imported>& imported) {
  JobShape shape;
  for (const Imported& m : imported) {
    if (!m.result) continue;
    const ImportResult& r = *m.result;
    if (r.world_size > kMaxJobRanks) {
      throw JobError(fmt::format("{} says it is a rank of a job of {} ranks, beyond the {} a job may have", m.source,
                                 r.world_size, kMaxJobRanks));
    }
    if (r.world_size >= 0 && shape.sized_by && r.world_size != shape.world_size) {
      throw JobError(fmt::format("{} is a rank of a job of {} ranks but {} of one of {}: they are not one job",
                                 shape.sized_by->source, shape.world_size, m.source, r.world_size));
    }
    if (r.world_size >= 0 && !shape.sized_by) shape = {r.world_size, shape.backend, &m, shape.backend_by};
    if (!r.backend.empty() && shape.backend_by && r.backend != shape.backend) {
      throw JobError(fmt::format("{} ran on {} but {} on {}: they are not one job", shape.backend_by->source,
                                 shape.backend, m.source, r.backend));
    }
    if (!r.backend.empty() && !shape.backend_by) {
      shape.backend = r.backend;
      shape.backend_by = &m;
    }
  }
  return shape;
}

// The imported sources by rank, checked: one source per rank, every rank
// within the job.
std::map<int64_t, const Imported*> ranks_of(const std::vector<Imported>& imported, int64_t world_size, bool by_order) {
  std::map<int64_t, const Imported*> ranks;
  for (size_t i = 0; i < imported.size(); ++i) {
    const Imported& m = imported[i];
    if (!m.result) continue;
    int64_t r = rank_of(m, by_order ? std::optional<int64_t>(int64_t(i)) : std::nullopt);
    if (world_size >= 0 && r >= world_size) {
      throw JobError(fmt::format("{} is rank {}, beyond the job's {} ranks", m.source, r, world_size));
    }
    auto [it, inserted] = ranks.emplace(r, &m);
    if (!inserted) throw JobError(fmt::format("{} and {} are both rank {}", it->second->source, m.source, r));
  }
  return ranks;
}

Job assemble(const std::vector<Imported>& imported, const JobWrite& w, bool ranks_by_order) {
  JobShape shape = job_shape(imported);
  std::map<int64_t, const Imported*> ranks = ranks_of(imported, shape.world_size, ranks_by_order);
  if (ranks.empty()) {
    throw JobError(fmt::format("no source could be imported; the first: {}", imported.front().error));
  }
  Job job;
  job.dir = w.dir();
  job.backend = shape.backend;
  job.world_size = shape.world_size >= 0 ? shape.world_size : ranks.rbegin()->first + 1;
  for (const auto& [rank, m] : ranks) {
    job.ranks.push_back({.rank = rank,
                         .trace = w.trace_name(rank),
                         .source = fs::absolute(m->source).string(),
                         .host = m->result->host,
                         .events = m->result->rows_written});
  }
  for (const Imported& m : imported) {
    if (!m.result) job.failures.push_back({fs::absolute(m.source).string(), m.error});
  }
  job.missing = missing_ranks(job);
  return job;
}

}  // namespace

Job import_job(const std::vector<std::string>& sources, const std::string& dir, const JobImportOptions& options) {
  if (sources.empty()) throw JobError("no traces to make a job of");
  JobWrite w(dir);
  std::vector<Imported> imported = import_all(sources, w, options);
  Job job = assemble(imported, w, options.ranks_by_order);
  std::map<std::string, const Imported*> by_source;
  for (const Imported& m : imported) by_source[fs::absolute(m.source).string()] = &m;
  for (const JobRank& r : job.ranks) w.rename(by_source.at(r.source)->staged, r.trace);
  w.commit(job);
  return job;
}

}  // namespace loupe::prof
