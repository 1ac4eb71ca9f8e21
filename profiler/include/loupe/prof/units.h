// Numbers as a person reads them: "1.234 ms", "12.3 MiB", "1,234,567".
// Used by finding texts and by the CLI, so both word figures alike.
#pragma once

#include <cstdint>
#include <string>

namespace loupe::prof {

std::string format_duration(int64_t ns);  // "850 ns", "1.234 us", "12.500 ms", "3.000 s"
std::string format_bytes(int64_t bytes);  // "512 B", "1.5 KiB", "12.3 MiB", "2.00 GiB"
// A rate, any finite value (a copy timed at 1 ns gives an absurd one):
// "512 B/s", "12.3 MiB/s", "24.00 GiB/s".
std::string format_byte_rate(double bytes_per_second);
std::string format_count(uint64_t n);         // "1,234,567"
std::string format_percent(double fraction);  // 0.1234 -> "12.3%"

// A number as a user writes one: "0.5", "5%"; with `duration`, also "20us",
// "1.5ms", "2s" (in ns). Throws std::invalid_argument naming the problem.
double parse_number(const std::string& text, bool duration);

}  // namespace loupe::prof
