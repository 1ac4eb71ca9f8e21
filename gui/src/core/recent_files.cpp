#include "loupe/view/recent_files.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "loupe/prof/output_file.h"

namespace loupe::view {

std::string recent_files_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/loupe/recent-files";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.config/loupe/recent-files";
  return "";
}

std::vector<std::string> load_recent_files(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty()) return out;
  std::ifstream f(path);
  std::string line;
  while (out.size() < kMaxRecentFiles && std::getline(f, line)) {
    if (!line.empty() && std::find(out.begin(), out.end(), line) == out.end()) out.push_back(line);
  }
  return out;
}

std::vector<std::string> add_recent_file(std::vector<std::string> list, const std::string& file) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(file, ec).lexically_normal().string();
  if (ec) abs = file;
  list.erase(std::remove(list.begin(), list.end(), abs), list.end());
  list.insert(list.begin(), abs);
  if (list.size() > kMaxRecentFiles) list.resize(kMaxRecentFiles);
  return list;
}

bool save_recent_files(const std::string& path, const std::vector<std::string>& list) {
  if (path.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Through OutputFile like every file loupe writes: a crash never leaves
  // half a list, and a failure leaves the old one.
  try {
    prof::OutputFile out(path);
    for (const std::string& s : list) std::fprintf(out.stream(), "%s\n", s.c_str());
    out.commit();
    return true;
  } catch (const prof::FileError&) {
    return false;
  }
}

}  // namespace loupe::view
