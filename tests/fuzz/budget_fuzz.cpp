// The budget TOML parser on any text; a budget it accepts is checked.
#include "fuzz_input.h"
#include "loupe/prof/budget.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    loupe::prof::Budget b = loupe::prof::parse_budget(text, "fuzz.toml");
    loupe::prof::analysis_options(b);
    loupe::prof::check_budget(b, loupe::prof::AnalysisReport{});
  } catch (const loupe::prof::BudgetError&) {
  }
  return 0;
}
