#include "loupe/view/options.h"

#include <charconv>
#include <stdexcept>
#include <tuple>

#include "loupe/view/panel_list.h"

namespace loupe::view {

namespace {

template <typename Int>
Int parse_int(const std::string& text, const std::string& what) {
  Int v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) {
    throw std::invalid_argument(what + ": `" + text + "` is not an integer");
  }
  return v;
}

// A flag's value in two parts around `sep`, or invalid_argument saying
// what it should look like.
std::pair<std::string, std::string> split_value(const std::string& flag, const std::string& v, char sep,
                                                const char* form) {
  size_t at = v.find(sep);
  if (at == std::string::npos) throw std::invalid_argument(flag + ": `" + v + "` is not " + form);
  return {v.substr(0, at), v.substr(at + 1)};
}

// A window pixel given as X,Y (--mouse, --click).
std::pair<float, float> parse_point(const std::string& flag, const std::string& v) {
  auto [x, y] = split_value(flag, v, ',', "X,Y");
  std::string what = flag;
  return {float(parse_int<int>(x, what.append(" x"))), float(parse_int<int>(y, flag + " y"))};
}

// The options that need another, or exclude one.
void check_combinations(const ViewOptions& o) {
  if (!o.compare.empty() && o.file.empty()) throw std::invalid_argument("--compare needs a base trace before it");
  if (!o.screenshot.empty() && o.file.empty()) throw std::invalid_argument("--screenshot needs a trace to show");
  if (!o.expand_ranks.empty() && o.file.empty()) throw std::invalid_argument("--expand-rank needs a job to show");
  if (o.bench_frames && o.file.empty()) throw std::invalid_argument("--bench-frames needs a trace to show");
  if (o.mouse_given && o.screenshot.empty()) throw std::invalid_argument("--mouse goes with --screenshot");
  if (o.click_given && o.screenshot.empty()) throw std::invalid_argument("--click goes with --screenshot");
  if (o.bench_frames && !o.screenshot.empty())
    throw std::invalid_argument("--bench-frames and --screenshot exclude each other");
}

}  // namespace

std::string view_usage() {
  return "usage: loupe-view [FILE] [--compare HEAD] [--screenshot OUT.png] [--size WxH]\n"
         "                  [--zoom START_NS:END_NS] [--select-finding N] [--panel NAME]\n"
         "                  [--mouse X,Y] [--click X,Y] [--expand-rank R]... [--bench-frames N]\n"
         "\n"
         "  FILE                 a loupe trace to open (the base trace with --compare)\n"
         "  --compare HEAD       show HEAD below FILE, aligned at their first step, with their diff\n"
         "  --screenshot OUT.png render one frame, write it as a PNG and exit\n"
         "  --size WxH           window size in pixels (default 1600x900)\n"
         "  --zoom START:END     show trace time [START, END) in ns\n"
         "  --select-finding N   select finding N (as numbered by `loupe analyze`) and zoom to it\n"
         "  --panel NAME         the panel shown: " +
         panel_names(" or ") +
         "\n"
         "  --mouse X,Y          with --screenshot: rest the pointer at window pixel X,Y (tooltips, flows)\n"
         "  --click X,Y          with --screenshot: click at window pixel X,Y first (an event, a memory lane)\n"
         "  --expand-rank R      in a job, show rank R's own tracks under its row (repeatable)\n"
         "  --bench-frames N     print time to first frame and frame build times (JSON lines), exit\n";
}

ViewOptions parse_view_options(const std::vector<std::string>& args) {
  ViewOptions o;
  auto value = [&](size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
    return args[++i];
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--compare") {
      o.compare = value(i);
    } else if (a == "--screenshot") {
      o.screenshot = value(i);
    } else if (a == "--size") {
      const std::string& v = value(i);
      auto [width, height] = split_value("--size", v, 'x', "WxH (e.g. 1280x720)");
      o.width = parse_int<int>(width, "--size width");
      o.height = parse_int<int>(height, "--size height");
      if (o.width < 64 || o.height < 64 || o.width > 16384 || o.height > 16384) {
        throw std::invalid_argument("--size: `" + v + "` is outside 64x64 .. 16384x16384");
      }
      o.size_given = true;
    } else if (a == "--zoom") {
      const std::string& v = value(i);
      auto [start, end] = split_value("--zoom", v, ':', "START_NS:END_NS");
      o.zoom_start = parse_int<int64_t>(start, "--zoom start");
      o.zoom_end = parse_int<int64_t>(end, "--zoom end");
      if (o.zoom_end <= o.zoom_start)
        throw std::invalid_argument("--zoom: the end must be after the start in `" + v + "`");
      o.zoom_given = true;
    } else if (a == "--select-finding") {
      o.select_finding = parse_int<int>(value(i), "--select-finding");
      if (o.select_finding < 1) throw std::invalid_argument("--select-finding: findings are numbered from 1");
    } else if (a == "--panel") {
      o.panel = value(i);
      if (!panel_named(o.panel)) {
        throw std::invalid_argument("--panel: `" + o.panel + "` is none of " + panel_names());
      }
    } else if (a == "--mouse") {
      std::tie(o.mouse_x, o.mouse_y) = parse_point(a, value(i));
      o.mouse_given = true;
    } else if (a == "--click") {
      std::tie(o.click_x, o.click_y) = parse_point(a, value(i));
      o.click_given = true;
    } else if (a == "--expand-rank") {
      o.expand_ranks.push_back(parse_int<int64_t>(value(i), "--expand-rank"));
    } else if (a == "--bench-frames") {
      o.bench_frames = parse_int<int>(value(i), "--bench-frames");
      if (o.bench_frames < 1) throw std::invalid_argument("--bench-frames: need at least 1 frame");
    } else if (!a.empty() && a[0] == '-') {
      throw std::invalid_argument("unknown option " + a);
    } else if (o.file.empty()) {
      o.file = a;
    } else {
      throw std::invalid_argument("one trace only (`" + a + "`); use --compare HEAD for a second");
    }
  }
  if (!o.help) check_combinations(o);
  return o;
}

}  // namespace loupe::view
