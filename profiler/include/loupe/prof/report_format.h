// An analysis report as text for a terminal, JSON for machines and Markdown
// for a pull-request comment. docs/analyses.md documents the JSON schema.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loupe/prof/analysis.h"

namespace loupe::prof {

// How findings are written for a terminal.
struct TextStyle {
  bool color = false;  // ANSI colours by severity
  // Findings of information in full, evidence and suggestion; else one
  // line each, so that the warnings and errors are what fills the screen.
  bool all = false;
};

std::string report_text(const AnalysisReport& report, TextStyle style);
std::string report_json(const AnalysisReport& report);
std::string report_markdown(const AnalysisReport& report);

// The findings alone, as the reports above word them (a job's report
// shares them): text, a JSON array, Markdown.
std::string findings_text(const std::vector<Finding>& findings, TextStyle style);
// `replaced` counts the invalid UTF-8 sequences replaced, if given.
std::string findings_json(const std::vector<Finding>& findings, uint64_t* replaced = nullptr);
std::string findings_markdown(const std::vector<Finding>& findings);

// The JSON schema's version, carried in every document as "schema" (reports
// and diffs). 2: each metric has one name everywhere (metrics.h).
inline constexpr int kReportSchemaVersion = 2;

}  // namespace loupe::prof
