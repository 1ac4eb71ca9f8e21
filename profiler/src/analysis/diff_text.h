// How a diff's figures read in every format: "+1.000 ms", "+12.5%", and a
// row's mark ("* increased", with its p where tested).
#pragma once

#include <string>

#include "loupe/prof/trace_diff.h"

namespace loupe::prof {

// A row's value in its unit; `signed_` puts '+' on a positive one.
std::string diff_value_text(const DiffRow& r, double v, bool signed_ = false);
std::string diff_percent_text(const DiffRow& r);  // "+12.5%", "new", "0%"
// "* increased" beyond noise ("**increased**" in Markdown), "" within;
// ", p 0.003" appended where tested.
enum class MarkStyle { text, markdown };
std::string diff_mark_text(const DiffRow& r, MarkStyle style = MarkStyle::text);

}  // namespace loupe::prof
