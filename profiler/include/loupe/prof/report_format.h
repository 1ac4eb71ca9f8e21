// An analysis report as text for a terminal, JSON for machines and Markdown
// for a pull-request comment. docs/analyses.md documents the JSON schema.
#pragma once

#include <string>

#include "loupe/prof/analysis.h"

namespace loupe::prof {

std::string report_text(const AnalysisReport& report, bool color);
std::string report_json(const AnalysisReport& report);
std::string report_markdown(const AnalysisReport& report);

// The JSON schema's version, carried in every document as "schema".
inline constexpr int kReportSchemaVersion = 1;

}  // namespace loupe::prof
