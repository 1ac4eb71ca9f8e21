#include "open/trace_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

#include "loupe/prof/job.h"
#include "loupe/prof/output_file.h"
#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof::open {

namespace fs = std::filesystem;

namespace {

// What an entry's name says besides its content: the trace format and the
// loupe that wrote it.
std::string versions() { return fmt::format("f{}.{}-loupe{}", kFormatMajor, kFormatMinor, LOUPE_VERSION); }

// An entry's name, as trace_entry() and job_entry() make it: 16 hex
// digits, '-', the size, '-', the versions, ".db" or ".job". Anything else
// in the folder (a person's own trace, if LOUPE_CACHE_DIR names a folder of
// them) is not the cache's and is never removed.
bool is_entry(std::string_view name) {
  if (!name.ends_with(".db") && !name.ends_with(".job")) return false;
  if (name.size() < 18 || name[16] != '-') return false;
  bool hex = std::all_of(name.begin(), name.begin() + 16, [](char c) { return std::isxdigit(uint8_t(c)) != 0; });
  size_t size_end = name.find('-', 17);
  bool digits =
      size_end != std::string_view::npos && size_end > 17 &&
      std::all_of(name.begin() + 17, name.begin() + long(size_end), [](char c) { return c >= '0' && c <= '9'; });
  return hex && digits && name.substr(size_end + 1).starts_with("f") && name.find("-loupe") != std::string_view::npos;
}
// A temporary file of an entry's write (OutputFile's "<entry>.loupe-tmp-...").
bool is_leftover(std::string_view name) {
  size_t at = name.find(".loupe-tmp-");
  return at != std::string_view::npos && is_entry(name.substr(0, at));
}

// A use: the entry's time is now, so that the cap removes others first.
void touch(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

uint64_t size_of(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(p, ec))) {
    uint64_t n = fs::file_size(p, ec);
    return ec ? 0 : n;
  }
  uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(p, ec)) {
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  }
  return n;
}

void remove_entry(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  remove_with_sidecars(path);
}

}  // namespace

TraceCache::TraceCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

std::string TraceCache::usable() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return fmt::format("{}: cannot create: {}", dir_, ec.message());
  if (!fs::is_directory(dir_, ec)) return fmt::format("{}: not a folder", dir_);
  if (::access(dir_.c_str(), W_OK | X_OK) != 0) return fmt::format("{}: {}", dir_, std::strerror(errno));
  return "";
}

std::string TraceCache::trace_entry(const ContentHash& c) const {
  return (fs::path(dir_) / fmt::format("{:016x}-{}-{}.db", c.hash, c.bytes, versions())).string();
}

std::string TraceCache::job_entry(const ContentHash& c) const {
  return (fs::path(dir_) / fmt::format("{:016x}-{}-{}.job", c.hash, c.bytes, versions())).string();
}

std::optional<TraceModel> TraceCache::read_trace(const std::string& entry) const {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(entry, ec))) return std::nullopt;
  try {
    TraceModel m = load_trace(entry);
    touch(entry);
    return m;
  } catch (const std::exception&) {
    remove_entry(entry);
    return std::nullopt;
  }
}

bool TraceCache::has_job(const std::string& entry) const {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(entry, ec))) return false;
  try {
    Job job = read_job(entry);
    if (job.ranks.empty()) throw JobError("no ranks");
    for (const JobRank& r : job.ranks) load_trace(job.trace_path(r), {.tables = std::vector<std::string>{}});
    touch(entry);
    return true;
  } catch (const std::exception&) {
    remove_entry(entry);
    return false;
  }
}

void TraceCache::write_trace(const TraceModel& m, const std::string& entry) const {
  TraceWriter w(entry, {.producer = m.info.producer, .live = false});
  write_model(m, w);
  keep_cap(entry);
}

void TraceCache::keep_cap(const std::string& keep) const {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    std::string name = e.path().filename().string();
    fs::file_time_type used = e.last_write_time(ec);
    if (ec) continue;
    if (is_leftover(name) && used < an_hour_ago) {
      remove_entry(e.path().string());
    } else if (is_entry(name) && !is_leftover(name)) {
      entries.push_back({e.path(), used, size_of(e.path())});
      total += entries.back().bytes;
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (e.path == fs::path(keep)) continue;
    remove_entry(e.path.string());
    total -= e.bytes;
  }
}

}  // namespace loupe::prof::open
