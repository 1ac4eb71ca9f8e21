#include "loupe/prof/open_input.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "loupe/prof/input_file.h"
#include "loupe/prof/job.h"
#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_reader.h"
#include "open/content_hash.h"
#include "open/jax_profile.h"
#include "open/known_files.h"
#include "open/trace_cache.h"

namespace loupe::prof {

namespace fs = std::filesystem;

namespace {

// The first bytes of a file, read through the input gate.
std::string file_head(const std::string& path, size_t n) {
  int fd = open_input_file_or_throw<InputError>(path);
  std::string head(n, '\0');
  ssize_t got = ::read(fd, head.data(), n);
  ::close(fd);
  head.resize(got > 0 ? size_t(got) : 0);
  return head;
}

// A SQLite file's application id (header bytes 68 to 71, big-endian):
// loupe's marks a loupe trace, anything else is another program's (an
// Nsight Systems export).
bool is_loupe_trace(const std::string& head) {
  if (head.size() < 72 || std::memcmp(head.data(), "SQLite format 3", 16) != 0) return false;
  uint32_t id = 0;
  for (int i = 68; i < 72; ++i) id = (id << 8) | uint8_t(head[size_t(i)]);
  return int64_t(id) == int64_t(kApplicationId);
}

InputPlan plan_folder(const std::string& path) {
  InputPlan plan{.kind = InputKind::job, .path = path, .source = path};
  if (is_job(path)) return plan;
  std::optional<open::ProfileRun> run = open::find_profile_run(path);
  if (!run) {
    throw InputError(
        fmt::format("{}: is a directory, not a regular file, and neither a job's folder (it has no {}) "
                    "nor a JAX profile (plugins/profile/<run>/<host>.trace.json.gz); give a trace file",
                    path, kJobIndexName));
  }
  plan.kind = InputKind::jax_profile;
  plan.notes = std::move(run->notes);
  plan.source = run->traces.size() == 1 ? run->traces.front() : run->dir;
  plan.sources = std::move(run->traces);
  return plan;
}

// The hash of several files' contents together, in order.
open::ContentHash hash_files(const std::vector<std::string>& paths) {
  std::string joined;
  uint64_t bytes = 0;
  for (const std::string& p : paths) {
    open::ContentHash h = open::hash_file(p);
    joined += fmt::format("{:016x}-{};", h.hash, h.bytes);
    bytes += h.bytes;
  }
  return {open::hash_bytes(joined.data(), joined.size()), bytes};
}

open::TraceCache cache_of(const InputOptions& options) {
  return open::TraceCache(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir,
                          options.cache_max_bytes ? options.cache_max_bytes : default_cache_max_bytes());
}

std::string cache_unusable_note(const std::string& why) {
  return fmt::format(
      "the cache of imported traces cannot be used ({}); reading without it (--no-cache, or "
      "LOUPE_CACHE_DIR for another folder)",
      why);
}

}  // namespace

InputPlan plan_input(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw InputError(fmt::format("{}: cannot open: {}", path, ec ? ec.message() : "No such file or directory"));
  }
  if (fs::is_directory(st)) return plan_folder(path);
  std::string head = file_head(path, 100);
  if (head.empty()) throw InputError(fmt::format("{}: the file is empty", path));
  if (is_loupe_trace(head)) return {.kind = InputKind::loupe_trace, .path = path, .source = path};
  // A .db is meant as a loupe trace: say so rather than what JSON it is not.
  if (path.ends_with(".db") && !head.starts_with("SQLite format 3")) {
    throw InputError(fmt::format("{}: not a loupe trace (not a SQLite database)", path));
  }
  open::refuse_known_non_trace(path, head);
  return {.kind = InputKind::foreign, .path = path, .source = path};
}

OpenedInput::~OpenedInput() { wait_for_cache(); }

OpenedInput& OpenedInput::operator=(OpenedInput&& other) noexcept {
  if (this == &other) return *this;
  wait_for_cache();
  plan = std::move(other.plan);
  job_dir = std::move(other.job_dir);
  model = std::move(other.model);
  from_cache = other.from_cache;
  cache_writer_ = std::move(other.cache_writer_);
  cache_error_ = std::move(other.cache_error_);
  temporary_job_ = std::move(other.temporary_job_);
  return *this;
}

std::string OpenedInput::wait_for_cache() {
  if (cache_writer_) {
    cache_writer_->join();
    cache_writer_.reset();
  }
  return cache_error_ ? *cache_error_ : "";
}

TraceModel OpenedInput::take_model() {
  if (!model) throw InputError(fmt::format("{}: a job, not one trace", plan.path));
  bool writing = cache_writer_ && cache_writer_->joinable();
  std::shared_ptr<const TraceModel> m = std::move(model);
  // Every model here was made as a TraceModel (never const), and only the
  // cache's writer shares it: once it is done, the model is ours to move.
  if (writing || m.use_count() > 1) return *m;
  return std::move(const_cast<TraceModel&>(*m));
}

namespace {

// A foreign trace's model: from the cache, or imported in memory and then
// written to the cache on a thread of its own.
void open_foreign(OpenedInput& in, const std::string& source, const InputOptions& options,
                  std::unique_ptr<std::thread>& writer, std::shared_ptr<std::string>& error) {
  auto imported = [&] {
    return std::make_shared<TraceModel>(import_model(source, {.format = options.format, .threads = options.threads}));
  };
  // A file that cannot be a trace fails at its first bytes, before the
  // cache would hash all of it (a 10 GB file of zeros).
  if (!options.use_cache || !looks_importable(source)) {
    in.model = imported();
    return;
  }
  open::TraceCache cache = cache_of(options);
  if (std::string why = cache.usable(); !why.empty()) {
    in.plan.notes.push_back(cache_unusable_note(why));
    in.model = imported();
    return;
  }
  std::string entry = cache.trace_entry(open::hash_file(source));
  if (std::optional<TraceModel> hit = cache.read_trace(entry)) {
    // The entry was made from the same content, perhaps under another name.
    hit->path = source;
    hit->info.meta["source_file"] = source;
    in.model = std::make_shared<TraceModel>(std::move(*hit));
    in.from_cache = true;
    return;
  }
  std::shared_ptr<const TraceModel> model = imported();
  in.model = model;
  error = std::make_shared<std::string>();
  writer = std::make_unique<std::thread>([cache, model, entry, error] {
    try {
      cache.write_trace(*model, entry);
    } catch (const std::exception& e) {
      *error = e.what();
    }
  });
}

// Several hosts' traces: a job, kept in the cache (or a temporary folder).
void open_hosts(OpenedInput& in, const InputOptions& options, std::shared_ptr<const std::string>& temporary) {
  const std::vector<std::string>& sources = in.plan.sources;
  open::TraceCache cache = cache_of(options);
  std::string why = options.use_cache ? cache.usable() : "";
  if (!why.empty()) in.plan.notes.push_back(cache_unusable_note(why));
  if (options.use_cache && why.empty()) {
    in.job_dir = cache.job_entry(hash_files(sources));
    if (cache.has_job(in.job_dir)) {
      in.from_cache = true;
      return;
    }
    import_job(sources, in.job_dir, {.format = options.format, .ranks_by_order = true});
    cache.keep_cap(in.job_dir);
    return;
  }
  std::string dir =
      (fs::temp_directory_path() / fmt::format("loupe-job-{}-{}", ::getpid(), hash_files(sources).hash)).string();
  temporary = std::shared_ptr<const std::string>(new std::string(dir), [](const std::string* d) {
    std::error_code ec;
    fs::remove_all(*d, ec);
    delete d;
  });
  import_job(sources, dir, {.format = options.format, .ranks_by_order = true});
  in.job_dir = dir;
}

}  // namespace

OpenedInput open_input(const std::string& path, const InputOptions& options) {
  OpenedInput in;
  in.plan = plan_input(path);
  switch (in.plan.kind) {
    case InputKind::loupe_trace:
      in.model = std::make_shared<TraceModel>(load_trace(path, {.threads = options.threads}));
      break;
    case InputKind::job: in.job_dir = path; break;
    case InputKind::foreign: open_foreign(in, path, options, in.cache_writer_, in.cache_error_); break;
    case InputKind::jax_profile:
      if (in.plan.sources.size() == 1) {
        open_foreign(in, in.plan.source, options, in.cache_writer_, in.cache_error_);
      } else {
        open_hosts(in, options, in.temporary_job_);
      }
      break;
  }
  return in;
}

std::string default_cache_dir() {
  if (const char* dir = std::getenv("LOUPE_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "loupe" / "traces").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "loupe" / "traces").string();
}

uint64_t default_cache_max_bytes() {
  if (const char* mb = std::getenv("LOUPE_CACHE_MAX_MB"); mb && *mb) {
    char* end = nullptr;
    unsigned long long n = std::strtoull(mb, &end, 10);
    if (end == mb || *end != '\0' || n >= (1ull << 40)) {
      throw InputError(fmt::format("LOUPE_CACHE_MAX_MB is '{}', not a number of mebibytes", mb));
    }
    return uint64_t(n) << 20;
  }
  return uint64_t(2) << 30;
}

}  // namespace loupe::prof
