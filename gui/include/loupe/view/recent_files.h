// The recent-files list, most recent first, kept in
// $XDG_CONFIG_HOME/loupe/recent-files (or ~/.config/loupe/recent-files),
// one absolute path a line.
#pragma once

#include <string>
#include <vector>

namespace loupe::view {

inline constexpr size_t kMaxRecentFiles = 12;

// The file the list lives in ("" when neither XDG_CONFIG_HOME nor HOME is set).
std::string recent_files_path();
// Reads the list (empty when there is none or it cannot be read).
std::vector<std::string> load_recent_files(const std::string& path);
// Puts `file` first (as an absolute path), drops duplicates, keeps
// kMaxRecentFiles. Returns the new list.
std::vector<std::string> add_recent_file(std::vector<std::string> list, const std::string& file);
// Writes the list, creating its directory; false when it cannot.
bool save_recent_files(const std::string& path, const std::vector<std::string>& list);

}  // namespace loupe::view
