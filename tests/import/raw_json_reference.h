// A second, independent reading of a Kineto JSON file for the reference
// tests: nlohmann's SAX parser (numbers as their original text, never a
// double) and string arithmetic for microseconds -> nanoseconds. It
// shares no code with the importer. It computes each device's busy time,
// the union of its kernel, memcpy and memset intervals, in integer ns (a
// copy's duration from Kineto's own bandwidth where it records one), and
// how many ProfilerStep#N annotations overlap any of those intervals (the
// steps with device work).
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "covered_length.h"

namespace loupe::test {

inline std::string gunzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  gzclose(f);
  return out;
}

// "1681234567890.1235" (microseconds) -> 1681234567890124 (ns): the digits
// after the point are padded to three, and a fourth and later digits round
// the third (halves up; times are never negative here).
inline int64_t micros_text_to_ns(const std::string& text) {
  if (text.find_first_of("eE-") != std::string::npos) throw std::runtime_error("unexpected time " + text);
  size_t dot = text.find('.');
  std::string whole = text.substr(0, dot), frac = dot == std::string::npos ? "" : text.substr(dot + 1);
  bool round_up = frac.size() > 3 && frac[3] >= '5';
  frac = (frac + "000").substr(0, 3);
  int64_t ns = std::stoll(whole) * 1000 + std::stoll(frac);
  return ns + (round_up ? 1 : 0);
}

class KinetoBusyReference : public nlohmann::json_sax<nlohmann::json> {
 public:
  // Busy time per device.
  std::map<int64_t, int64_t> busy_ns() const {
    std::map<int64_t, int64_t> out;
    for (const auto& [device, iv] : intervals_) out[device] = test::covered_length(iv);
    return out;
  }

  // ProfilerStep#N annotations during which some device op ran (all of
  // them in a trace with no device ops: there, no step can show work).
  uint64_t steps_with_device_work() const {
    if (intervals_.empty()) return steps_.size();
    uint64_t n = 0;
    for (const auto& [a, b] : steps_) {
      bool worked = false;
      for (const auto& [device, iv] : intervals_) {
        for (const auto& [s, e] : iv) worked |= s < b && e > a;
      }
      n += worked;
    }
    return n;
  }

  bool null() override { return value(""); }
  bool boolean(bool) override { return value(""); }
  bool number_integer(number_integer_t v) override { return value(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(std::to_string(v)); }
  bool number_float(number_float_t, const string_t& s) override { return value(s); }
  bool string(string_t& s) override { return value(s); }
  bool binary(binary_t&) override { return value(""); }
  bool start_object(std::size_t) override {
    ++depth_;
    if (in_events_ && depth_ == 3) event_ = {};
    if (depth_ == 4 && key_ == "args") in_args_ = true;
    return true;
  }
  bool end_object() override {
    if (in_events_ && depth_ == 3) finish_event();
    if (depth_ == 4) in_args_ = false;
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (depth_ == 2 && key_ == "traceEvents") in_events_ = true;
    return true;
  }
  bool end_array() override {
    if (depth_ == 2) in_events_ = false;
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t at, const std::string&, const nlohmann::detail::exception& e) override {
    throw std::runtime_error("reference parse error at " + std::to_string(at) + ": " + e.what());
  }

 private:
  struct Event {
    std::string cat, name, ts, dur, pid, device, bytes, bandwidth;
  };

  bool value(const std::string& text) {
    if (!in_events_) return true;
    if (depth_ == 3) {
      if (key_ == "cat") event_.cat = text;
      if (key_ == "name") event_.name = text;
      if (key_ == "ts") event_.ts = text;
      if (key_ == "dur") event_.dur = text;
      if (key_ == "pid") event_.pid = text;
    } else if (depth_ == 4 && in_args_) {
      if (key_ == "device") event_.device = text;
      if (key_ == "bytes") event_.bytes = text;
      if (key_ == "memory bandwidth (GB/s)") event_.bandwidth = text;
    }
    return true;
  }

  void finish_event() {
    if (event_.cat == "user_annotation" && event_.name.rfind("ProfilerStep#", 0) == 0 && !event_.dur.empty()) {
      int64_t start = micros_text_to_ns(event_.ts);
      steps_.push_back({start, start + micros_text_to_ns(event_.dur)});
    }
    if (event_.cat != "kernel" && event_.cat != "gpu_memcpy" && event_.cat != "gpu_memset") return;
    int64_t device = std::stoll(event_.device.empty() ? event_.pid : event_.device);
    int64_t start = micros_text_to_ns(event_.ts);
    intervals_[device].push_back({start, start + duration_ns()});
  }

  // A device op's duration. A copy's or set's "memory bandwidth (GB/s)"
  // is Kineto's bytes over the nanoseconds CUPTI measured: the duration it
  // gives back stands when it lies within the microsecond an older Kineto
  // cut "dur" down to.
  int64_t duration_ns() const {
    int64_t written = micros_text_to_ns(event_.dur);
    auto is_number = [](const std::string& t) { return !t.empty() && t[0] >= '0' && t[0] <= '9'; };
    if (!is_number(event_.bytes) || !is_number(event_.bandwidth)) return written;
    long double bytes = std::stold(event_.bytes), gbps = std::stold(event_.bandwidth);
    if (bytes <= 0 || gbps <= 0) return written;
    auto measured = int64_t(std::llround(bytes / gbps));
    return measured < written + 1000 ? std::max(written, measured) : written;
  }

  int depth_ = 0;
  bool in_events_ = false, in_args_ = false;
  std::string key_;
  Event event_;
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> intervals_;
  std::vector<std::pair<int64_t, int64_t>> steps_;
};

// Busy time per device of a .json.gz Kineto trace.
inline std::map<int64_t, int64_t> reference_busy_ns(const std::string& path) {
  std::string json = gunzip_file(path);
  KinetoBusyReference sax;
  nlohmann::json::sax_parse(json, &sax);
  return sax.busy_ns();
}

inline uint64_t reference_steps_with_device_work(const std::string& path) {
  std::string json = gunzip_file(path);
  KinetoBusyReference sax;
  nlohmann::json::sax_parse(json, &sax);
  return sax.steps_with_device_work();
}

}  // namespace loupe::test
