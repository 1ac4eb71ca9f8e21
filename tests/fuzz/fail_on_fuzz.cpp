// `--fail-on` expressions and `--set` values on any text.
#include <stdexcept>
#include "fuzz_input.h"

#include "loupe/prof/trace_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    loupe::prof::FailOn rule = loupe::prof::parse_fail_on(text);
    loupe::prof::TraceDiff diff;
    diff.metrics.push_back({rule.metric, "ns", 100, 0, -100, -1, true});
    std::string why;
    loupe::prof::fail_on_crossed(rule, diff.metrics, &why);
  } catch (const std::invalid_argument&) {
  }
  loupe::prof::AnalysisOptions options;
  size_t eq = text.find('=');
  try {
    if (eq != std::string::npos) loupe::prof::set_analysis_parameter(options, text.substr(0, eq), text.substr(eq + 1));
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
