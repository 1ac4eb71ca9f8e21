// The findings on each real trace against tests/golden/<fixture>.txt: what
// an expert reading the raw trace expects, written from the raw JSON
// (tests/golden/README.md has the format). Every line of every rule holds.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "loupe/prof/analysis.h"
#include "loupe/prof/import.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"

using namespace loupe::prof;

namespace {

struct Range {
  double lo = 0, hi = 0;
  bool percent = false;  // of the active window
};

struct Expectation {
  int line = 0;
  bool forbid = false;
  std::string rule, subject, callsite, suggestion, text;
  std::optional<Range> impact, count;
  std::optional<Severity> severity;
};

Severity parse_severity(const std::string& s) {
  for (Severity v : {Severity::info, Severity::warning, Severity::error}) {
    if (s == name_of(v)) return v;
  }
  throw std::invalid_argument("unknown severity '" + s + "'");
}

// "12.5ms" -> ns; "40%" -> 0.40 with percent set.
double parse_amount(const std::string& s, bool* percent) {
  size_t used = 0;
  double v = std::stod(s, &used);
  std::string unit = s.substr(used);
  *percent = unit == "%";
  if (unit == "%") return v / 100;
  if (unit.empty() || unit == "ns") return v;
  if (unit == "us") return v * 1e3;
  if (unit == "ms") return v * 1e6;
  if (unit == "s") return v * 1e9;
  throw std::invalid_argument("unknown unit '" + unit + "'");
}

Range parse_range(const std::string& s) {
  size_t dots = s.find("..");
  if (dots == std::string::npos) throw std::invalid_argument("'" + s + "' is not LO..HI");
  Range r;
  bool p1 = false, p2 = false;
  r.lo = parse_amount(s.substr(0, dots), &p1);
  r.hi = parse_amount(s.substr(dots + 2), &p2);
  if (p1 != p2) throw std::invalid_argument("'" + s + "' mixes a share and a duration");
  r.percent = p1;
  return r;
}

// Splits a line into words, keeping "quoted text" whole, up to the '#'
// that starts the reason.
std::vector<std::string> words_of(const std::string& line, bool* has_reason) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false;
  *has_reason = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (!quoted && c == '#' && word.empty()) {
      *has_reason = true;
      break;
    }
    if (!quoted && (c == ' ' || c == '\t')) {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

std::vector<Expectation> read_golden(const std::string& path) {
  std::ifstream in(path);
  std::vector<Expectation> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    bool has_reason = false;
    std::vector<std::string> w = words_of(line, &has_reason);
    auto bad = [&](const std::string& why) {
      return std::invalid_argument(path + ":" + std::to_string(n) + ": " + why);
    };
    if (w.empty()) continue;
    if (!has_reason) throw bad("no '# reason'");
    if (w.size() < 2 || (w[0] != "expect" && w[0] != "forbid")) throw bad("expected 'expect RULE' or 'forbid RULE'");
    Expectation e{n, w[0] == "forbid", w[1]};
    e.text = line;
    for (size_t i = 2; i < w.size(); ++i) {
      size_t eq = w[i].find('=');
      if (eq == std::string::npos) throw bad("'" + w[i] + "' is not KEY=VALUE");
      std::string key = w[i].substr(0, eq), value = w[i].substr(eq + 1);
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
      if (key == "subject") e.subject = value;
      else if (key == "callsite") e.callsite = value;
      else if (key == "suggestion") e.suggestion = value;
      else if (key == "impact") e.impact = parse_range(value);
      else if (key == "count") e.count = parse_range(value);
      else if (key == "severity") e.severity = parse_severity(value);
      else throw bad("unknown key '" + key + "'");
    }
    out.push_back(e);
  }
  return out;
}

bool matches(const Expectation& e, const Finding& f, const AnalysisReport& r) {
  if (e.rule != "*" && f.rule != e.rule) return false;
  auto in_values = [&](const std::string& text, bool callsites_only) {
    if (!callsites_only && f.title.find(text) != std::string::npos) return true;
    for (const auto& [k, v] : f.evidence) {
      bool callsite = k.find("call site") != std::string::npos || k.find("callsite") != std::string::npos;
      if ((!callsites_only || callsite) && v.find(text) != std::string::npos) return true;
    }
    return false;
  };
  if (!e.subject.empty() && !in_values(e.subject, false)) return false;
  if (!e.callsite.empty() && !in_values(e.callsite, true)) return false;
  if (!e.suggestion.empty() && f.suggestion.find(e.suggestion) == std::string::npos) return false;
  if (e.severity && f.severity != *e.severity) return false;
  if (e.impact) {
    double window = double(r.window_end - r.window_start);
    double v = e.impact->percent ? double(f.impact_ns) / std::max(window, 1.0) : double(f.impact_ns);
    if (v < e.impact->lo - 1e-9 || v > e.impact->hi + 1e-9) return false;
  }
  return true;
}

std::string findings_text(const AnalysisReport& r) {
  std::string out;
  for (const Finding& f : r.findings)
    out += "  [" + f.rule + "] " + f.title + " (impact " + std::to_string(f.impact_ns) + " ns)\n";
  return out;
}

// The real traces: the shared fixtures, and those kept in the repository
// (tests/fixtures/kineto, with their provenance in its README).
const std::string kFixtureDirs[] = {LOUPE_FIXTURES_DIR, LOUPE_REPO_FIXTURES_DIR};

// The trace of a golden file, or "" when absent (the shared fixtures live
// beside the checkout, not in it).
std::string fixture_path(const std::string& name) {
  for (const std::string& dir : kFixtureDirs) {
    std::string path = dir + "/" + name + ".json.gz";
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, FindingsMatchWhatTheRawTraceShows) {
  const std::string name = GetParam();
  std::vector<Expectation> lines = read_golden(std::string(LOUPE_GOLDEN_DIR) + "/" + name + ".txt");
  ASSERT_FALSE(lines.empty());
  const std::string trace = fixture_path(name);
  if (trace.empty()) {
    GTEST_SKIP() << "the trace of " << name << ".txt is absent (shared fixtures: " << LOUPE_FIXTURES_DIR << ")";
  }
  loupe::test::TempDir dir;
  std::string db = dir.file(name + ".db");
  import_trace(trace, db, {});
  AnalysisReport r = analyze(load_trace(db));
  // What the report's header says the trace lacks, one "incomplete" entry
  // each: its title what is missing, its evidence what not to trust.
  std::vector<Finding> entries = r.findings;
  for (const Incompleteness& i : r.incomplete) {
    Finding f;
    f.rule = "incomplete";
    f.title = i.missing;
    f.evidence = {{"cannot be trusted", i.untrusted}};
    entries.push_back(f);
  }
  for (const Expectation& e : lines) {
    size_t n = 0;
    for (const Finding& f : entries) n += matches(e, f, r);
    if (e.count) {
      EXPECT_TRUE(double(n) >= e.count->lo && double(n) <= e.count->hi)
          << name << ".txt:" << e.line << ": " << n << " matching findings\n"
          << e.text << "\n"
          << findings_text(r);
    } else if (e.forbid) {
      EXPECT_EQ(n, 0u) << name << ".txt:" << e.line << ": a forbidden finding\n" << e.text << "\n" << findings_text(r);
    } else {
      EXPECT_GT(n, 0u) << name << ".txt:" << e.line << ": no finding matches\n" << e.text << "\n" << findings_text(r);
    }
  }
}

std::vector<std::string> fixtures() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(LOUPE_GOLDEN_DIR)) {
    std::string file = entry.path().filename().string();
    if (file.size() > 4 && file.ends_with(".txt")) names.push_back(file.substr(0, file.size() - 4));
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Golden, ::testing::ValuesIn(fixtures()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Every golden file parses, and every fixture present has one.
TEST(GoldenFiles, EveryFixtureHasWellFormedExpectations) {
  for (const std::string& name : fixtures()) {
    EXPECT_NO_THROW(read_golden(std::string(LOUPE_GOLDEN_DIR) + "/" + name + ".txt")) << name;
  }
  for (const std::string& dir : kFixtureDirs) {
    if (!std::filesystem::is_directory(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::string file = entry.path().filename().string();
      if (!file.ends_with(".json.gz")) continue;
      std::string golden = std::string(LOUPE_GOLDEN_DIR) + "/" + file.substr(0, file.size() - 8) + ".txt";
      ASSERT_TRUE(std::filesystem::exists(golden)) << golden;
      EXPECT_NO_THROW(read_golden(golden)) << golden;
    }
  }
}

}  // namespace
