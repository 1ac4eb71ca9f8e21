// docs/analyses.md and the analysis parameters say the same: every
// parameter has one row in a "| parameter | default | why |" table, and
// the default written there is the one AnalysisOptions{} has.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "loupe/prof/analysis.h"

namespace {

// A default as the document writes it: "0.10", "100" or "20 us".
double documented_value(const std::string& text) {
  static const std::regex kValue(R"(^([0-9.]+)(?: (ns|us|ms|s))?$)");
  std::smatch m;
  if (!std::regex_match(text, m, kValue)) throw std::invalid_argument("not a default: '" + text + "'");
  static const std::map<std::string, double> kScale = {{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  return std::stod(m[1].str()) * kScale.at(m[2].str());
}

std::vector<std::string> split_list(const std::string& cell) {
  std::vector<std::string> items;
  std::stringstream in(cell);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item.substr(item.find_first_not_of(' ')));
  return items;
}

// Parameter name -> the default the document gives it; a row naming two
// parameters ("`idle_warning`, `idle_error` | 0.10, 0.30") gives two.
std::multimap<std::string, std::string> documented_defaults(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  static const std::regex kRow(R"(^\| ((?:`\w+`(?:, )?)+) \| ([^|]+) \| .*\|$)");
  std::multimap<std::string, std::string> defaults;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "| parameter | default | why |") in_table = true;
    if (!line.starts_with("|")) in_table = false;
    std::smatch m;
    if (!in_table || !std::regex_match(line, m, kRow)) continue;
    std::vector<std::string> names = split_list(m[1].str()), values = split_list(m[2].str());
    EXPECT_EQ(names.size(), values.size()) << line;
    for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
      defaults.emplace(names[i].substr(1, names[i].size() - 2), values[i]);
    }
  }
  return defaults;
}

TEST(AnalysisParameters, TheDocumentGivesEachItsDefault) {
  std::multimap<std::string, std::string> docs = documented_defaults(LOUPE_ANALYSES_DOC);
  std::vector<loupe::prof::AnalysisParameter> parameters = loupe::prof::analysis_parameters();
  ASSERT_FALSE(parameters.empty());
  for (const auto& p : parameters) {
    ASSERT_EQ(docs.count(p.name), 1u) << "docs/analyses.md should have one row for " << p.name;
    const std::string& text = docs.find(p.name)->second;
    EXPECT_DOUBLE_EQ(documented_value(text), p.default_value) << p.name << " is documented as " << text;
    EXPECT_EQ(text.find(' ') != std::string::npos, p.duration) << p.name << ": a duration has a unit, nothing else";
  }
  EXPECT_EQ(docs.size(), parameters.size()) << "docs/analyses.md documents a parameter the analyses do not have";
}

}  // namespace
