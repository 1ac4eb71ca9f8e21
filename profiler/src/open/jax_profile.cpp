#include "open/jax_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "loupe/prof/open_input.h"

namespace loupe::prof::open {

namespace fs = std::filesystem;

namespace {

// Far beyond any profile folder: a folder of more entries is refused, not
// listed without end.
constexpr size_t kMaxEntries = 100000;

constexpr std::string_view kJsonSuffix = ".trace.json.gz";
constexpr std::string_view kXplaneSuffix = ".xplane.pb";
constexpr std::string_view kPerfettoName = "perfetto_trace.json.gz";

// The names in `dir` whose status (following links; a link loop or a
// dangling link is neither) is a folder, or a regular file.
struct Listing {
  std::vector<std::string> folders, files;
};

Listing list(const fs::path& dir) {
  Listing out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) throw InputError(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
  size_t n = 0;
  for (; it != end; it.increment(ec)) {
    if (ec) throw InputError(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
    if (++n > kMaxEntries) {
      throw InputError(
          fmt::format("{}: holds more than {} entries; not a profile folder loupe reads", dir.string(), kMaxEntries));
    }
    std::error_code sec;
    fs::file_status st = fs::status(it->path(), sec);
    if (sec) continue;
    if (fs::is_directory(st)) out.folders.push_back(it->path().filename().string());
    if (fs::is_regular_file(st)) out.files.push_back(it->path().filename().string());
  }
  std::sort(out.folders.begin(), out.folders.end());
  std::sort(out.files.begin(), out.files.end());
  return out;
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The trace files of a run's folder: per host, its trace viewer JSON, or
// its XPlane when it has no JSON (both hold the same events: XProf makes
// the JSON from the XPlane; the JSON's mapping is the one checked on GPU
// traces); else the Perfetto JSON of the whole run. Empty when it holds
// none of these.
std::vector<std::string> run_traces(const fs::path& run, const Listing& files) {
  std::map<std::string, std::string> by_host;
  bool perfetto = false;
  for (const std::string& name : files.files) {
    if (name == kPerfettoName) perfetto = true;
    else if (name.ends_with(kJsonSuffix)) by_host[name.substr(0, name.size() - kJsonSuffix.size())] = name;
  }
  for (const std::string& name : files.files) {
    if (name.ends_with(kXplaneSuffix)) by_host.try_emplace(name.substr(0, name.size() - kXplaneSuffix.size()), name);
  }
  std::vector<std::string> traces;
  traces.reserve(by_host.size());
  for (const auto& [host, name] : by_host) traces.push_back((run / name).string());
  if (traces.empty() && perfetto) traces.push_back((run / kPerfettoName).string());
  return traces;
}

}  // namespace

std::optional<ProfileRun> find_profile_run(const std::string& dir) {
  fs::path root(dir);
  // A run's own folder first: it holds the traces themselves.
  Listing here = list(root);
  std::vector<std::string> traces = run_traces(root, here);
  if (!traces.empty()) return ProfileRun{dir, std::move(traces), {}};
  fs::path profile = is_dir(root / "plugins" / "profile") ? root / "plugins" / "profile" : root;
  if (profile == root && root.filename() != "profile") return std::nullopt;
  Listing runs = profile == root ? here : list(profile);
  // The newest run with a trace: names sort by the time the run began.
  for (auto it = runs.folders.rbegin(); it != runs.folders.rend(); ++it) {
    fs::path run = profile / *it;
    std::vector<std::string> found = run_traces(run, list(run));
    if (found.empty()) continue;
    ProfileRun r{run.string(), std::move(found), {}};
    if (runs.folders.size() > 1) {
      r.notes.push_back(fmt::format("{} holds {} profile runs; reading the newest with a trace, {}", profile.string(),
                                    runs.folders.size(), *it));
    }
    return r;
  }
  throw InputError(
      fmt::format("{}: a JAX profile folder with no run holding a trace (<host>.trace.json.gz, "
                  "<host>.xplane.pb or perfetto_trace.json.gz)",
                  profile.string()));
}

}  // namespace loupe::prof::open
