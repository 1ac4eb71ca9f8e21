// loupe-view end to end, under Xvfb: screenshots of real traces, checked
// where the picture can be checked from its pixels. Where an idle gap is,
// its shading must be, in the colour of its cause: the expected x comes
// from the time <-> pixel mapping of the core, fed with the axis the
// viewer reports for the frame it drew.
#include <fcntl.h>  // run_command.h needs it
#include <gtest/gtest.h>
#include <stb/stb_image.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "loupe/prof/analysis.h"
#include "loupe/prof/job_analysis.h"
#include "loupe/prof/job_synth.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_writer.h"
#include "loupe/view/palette.h"
#include "loupe/view/time_axis.h"
#include "loupe/view/track_list.h"
#include "profiler/test_files.h"
#include "run_command.h"

namespace loupe::view {
namespace {

using namespace loupe::prof;

std::string find_xvfb_run() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string p = dir + "/xvfb-run";
    if (!dir.empty() && ::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;
  Color at(int x, int y) const {
    const uint8_t* p = &rgba[(size_t(y) * size_t(width) + size_t(x)) * 4];
    return rgba_color(p);
  }
  static Color rgba_color(const uint8_t* p) { return view::rgba(p[0], p[1], p[2]); }
};

Image load_png(const std::string& path) {
  Image img;
  int comp = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.width, &img.height, &comp, 4);
  if (!data) return img;
  img.rgba.assign(data, data + size_t(img.width) * size_t(img.height) * 4);
  stbi_image_free(data);
  return img;
}

bool same_rgb(Color a, Color b) {
  return red_of(a) == red_of(b) && green_of(a) == green_of(b) && blue_of(a) == blue_of(b);
}

class ViewerScreenshot : public ::testing::Test {
 protected:
  void SetUp() override {
    xvfb_ = find_xvfb_run();
    if (xvfb_.empty()) GTEST_SKIP() << "xvfb-run is not installed (scripts/setup installs xvfb): no headless display";
  }

  // Runs loupe-view under Xvfb; the layout line it prints is parsed into `layout`.
  test::CommandResult view(std::vector<std::string> args, nlohmann::json* layout = nullptr) {
    // loupe-view's own exit status, said on stderr by a shell around it:
    // xvfb-run replaces it with 5 when it fails to remove its temporary
    // folder afterwards (seen once under a loaded CI run).
    std::vector<std::string> cmd = {xvfb_,
                                    "-a",
                                    "-s",
                                    "-screen 0 1600x1200x24",
                                    "/bin/sh",
                                    "-c",
                                    "\"$@\"; echo \"loupe-view exit $?\" >&2",
                                    "sh",
                                    LOUPE_VIEW_BIN};
#if defined(__SANITIZE_ADDRESS__)
    // Mesa's GL and DRI libraries leak, and GLFW unloads them at exit, so
    // LeakSanitizer reports those blocks from an unknown module, which no
    // suppression can name (a bare GLFW window does the same). Leaks are
    // checked in the viewer's own code by the GL-free tests instead.
    const char* asan = std::getenv("ASAN_OPTIONS");
    cmd.insert(cmd.begin(), {"/usr/bin/env", std::string("ASAN_OPTIONS=") + (asan ? asan : "") + ":detect_leaks=0"});
#endif
    cmd.insert(cmd.end(), args.begin(), args.end());
    test::CommandResult r = test::run_command(cmd, dir_.path().string());
    size_t at = r.err.rfind("loupe-view exit ");
    if (at != std::string::npos) {
      r.exit_code = std::atoi(r.err.c_str() + at + 16);
      r.err.erase(at);
    }
    if (layout && r.exit_code == 0) *layout = nlohmann::json::parse(r.out, nullptr, false);
    return r;
  }

  static TimeAxis axis_of(const nlohmann::json& layout) {
    const auto& a = layout["axis"];
    return TimeAxis{a["start_ns"].get<double>(), a["ns_per_px"].get<double>(), a["x0"].get<float>(),
                    a["width"].get<float>()};
  }

  static const nlohmann::json* track(const nlohmann::json& layout, const std::string& kind, uint32_t device,
                                     uint32_t stream, int doc = 0) {
    for (const auto& t : layout["tracks"]) {
      if (t["kind"] == kind && t["device"] == device && t["stream"] == stream && t["doc"] == doc) return &t;
    }
    return nullptr;
  }

  // Expects the gap's colour across [start, end) of the track's middle row,
  // and not over the operations either side of it.
  static void expect_gap_shading(const Image& img, const nlohmann::json& layout, const nlohmann::json& tr,
                                 int64_t start, int64_t end, Color color, int64_t busy_before, int64_t busy_after) {
    TimeAxis axis = axis_of(layout);
    int y = int((tr["y0"].get<float>() + tr["y1"].get<float>()) / 2);
    int xa = int(std::ceil(axis.x(double(start)))) + 2, xb = int(std::floor(axis.x(double(end)))) - 2;
    ASSERT_LT(xa, xb) << "the gap should be several pixels wide at this zoom";
    ASSERT_GE(xa, int(axis.x0));
    ASSERT_LE(xb, int(axis.x0 + axis.width));
    int shaded = 0;
    for (int x = xa; x <= xb; ++x) shaded += same_rgb(img.at(x, y), color);
    // Labels or the recompile line may cross a few columns; the rest is shaded.
    EXPECT_GE(shaded, (xb - xa + 1) * 9 / 10) << "gap shading at x " << xa << ".." << xb << ", y " << y;
    // Operations run either side of the gap: no gap colour there.
    for (int64_t t : {busy_before, busy_after}) {
      int x = int(axis.x(double(t)));
      if (x < int(axis.x0) || x >= int(axis.x0 + axis.width)) continue;
      EXPECT_FALSE(same_rgb(img.at(x, y), color)) << "gap colour over an operation at x " << x;
    }
  }

  static void expect_not_blank(const Image& img) {
    ASSERT_GT(img.width, 0);
    std::set<Color> colors;
    size_t background = 0;
    for (int y = 0; y < img.height; y += 3) {
      for (int x = 0; x < img.width; x += 3) {
        Color c = img.at(x, y);
        colors.insert(c);
        background += same_rgb(c, palette::background);
      }
    }
    size_t sampled = size_t((img.height + 2) / 3) * size_t((img.width + 2) / 3);
    EXPECT_GT(colors.size(), 20u) << "a handful of colours: the window looks blank";
    EXPECT_LT(background, sampled * 95 / 100) << "almost all background: the window looks blank";
  }

  test::TempDir dir_;
  std::string xvfb_;
};

// A device busy from 0 to 2 ms and from 5 to 8 ms; the host compiles from
// 2 to 5 ms: an idle gap of 3 ms caused by compilation.
std::string write_gap_trace(const std::string& path) {
  TraceWriter w(path, {});
  w.put(DeviceRow{
      .id = 0, .name = "gpu", .kind = DeviceKind::cuda, .memory_capacity = int64_t(1) << 30, .copy_bandwidth = 0});
  w.put(StreamRow{.device = 0, .stream = 0, .name = "compute"});
  w.put(ThreadRow{.id = 0, .process = 1, .os_tid = 1, .name = "main", .dropped_events = 0});
  StringId k = w.intern("kernel"), fn = w.intern("train_step"), sig = w.intern("f32[8]"), jit = w.intern("jit compile");
  const std::pair<int64_t, int64_t> busy[] = {{0, 2'000'000}, {5'000'000, 8'000'000}};
  for (auto [from, to] : busy) {
    for (int64_t t = from; t < to; t += 250'000)
      w.add(DeviceOpRow{.device = 0,
                        .stream = 0,
                        .start = t,
                        .dur = 250'000,
                        .kind = DeviceOpKind::kernel,
                        .name = k,
                        .bytes = 0,
                        .copy_kind = CopyKind::none,
                        .correlation = 0});
  }
  w.add(HostSpanRow{.thread = 0,
                    .start = 2'000'000,
                    .dur = 3'000'000,
                    .name = jit,
                    .kind = SpanKind::compile,
                    .depth = 0,
                    .callsite = 0});
  CompileRow c;
  c.thread = 0;
  c.start = 2'000'000;
  c.dur = 3'000'000;
  c.function = fn;
  c.signature = sig;
  c.kind = CompileKind::miss;
  c.reason = "first compile";
  w.add(std::move(c));
  w.set_meta("status", "complete");
  w.close();
  return path;
}

TEST_F(ViewerScreenshot, IdleGapShadingSitsWhereTheGapIs) {
  std::string trace = write_gap_trace(dir_.file("gap.db"));
  // The analysis agrees there is one gap, caused by compilation.
  AnalysisReport report = analyze(load_trace(trace));
  ASSERT_EQ(report.devices.size(), 1u);
  ASSERT_EQ(report.devices[0].gaps.size(), 1u);
  const IdleGap& gap = report.devices[0].gaps[0];
  ASSERT_EQ(gap.start, 2'000'000);
  ASSERT_EQ(gap.end, 5'000'000);
  ASSERT_EQ(gap.cause, GapCause::compile);

  nlohmann::json layout;
  std::string png = dir_.file("gap.png");
  test::CommandResult r = view({trace, "--screenshot", png, "--size", "1000x600", "--zoom", "0:8000000"}, &layout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(layout.is_object()) << r.out;
  Image img = load_png(png);
  ASSERT_EQ(img.width, 1000);
  ASSERT_EQ(img.height, 600);
  expect_not_blank(img);
  // The view is the one asked for: 8 ms across the axis.
  TimeAxis axis = axis_of(layout);
  EXPECT_NEAR(axis.start_ns, 0, 1);
  EXPECT_NEAR(axis.ns_per_px * axis.width, 8e6, 1);
  const nlohmann::json* tr = track(layout, "stream", 0, 0);
  ASSERT_NE(tr, nullptr) << layout.dump();
  expect_gap_shading(img, layout, *tr, gap.start, gap.end, gap_color(GapCause::compile), 1'000'000, 6'500'000);
}

TEST_F(ViewerScreenshot, TraceRecordedBySampleShowsItsGaps) {
  std::string trace = dir_.file("workload.db");
  test::CommandResult rec =
      test::run_command({LOUPE_RECORD_WORKLOAD, "--out", trace, "--steps", "12"}, dir_.path().string());
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  // The widest gap the analysis found on device 0, and the view around it.
  TraceModel model = load_trace(trace);
  AnalysisReport report = analyze(model);
  ASSERT_FALSE(report.devices.empty());
  const auto& gaps = report.devices[0].gaps;
  ASSERT_FALSE(gaps.empty()) << "record_workload compiles at steps 0, 9 and 10: the device idles";
  const IdleGap& gap = *std::max_element(
      gaps.begin(), gaps.end(), [](const IdleGap& a, const IdleGap& b) { return a.end - a.start < b.end - b.start; });
  const int64_t len = gap.end - gap.start;
  const int64_t from = gap.start - len, to = gap.end + len;
  // The operations either side: one ends where the gap starts, one starts
  // where it ends; a point inside each must not be shaded.
  ASSERT_EQ(model.device_ops.size(), 1u);
  const DeviceOps& ops = model.device_ops[0];
  size_t after = lower_bound_time(ops.start, gap.end);
  ASSERT_LT(after, ops.size());
  ASSERT_GT(after, 0u);
  ASSERT_EQ(ops.start[after], gap.end);
  ASSERT_EQ(ops.end(after - 1), gap.start);
  int64_t inside_before = gap.start - std::min(ops.dur[after - 1], len) / 2;
  int64_t inside_after = gap.end + std::min(ops.dur[after], len) / 2;

  nlohmann::json layout;
  std::string png = dir_.file("workload.png");
  test::CommandResult r = view(
      {trace, "--screenshot", png, "--size", "1200x700", "--zoom", std::to_string(from) + ":" + std::to_string(to)},
      &layout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Image img = load_png(png);
  expect_not_blank(img);
  const nlohmann::json* tr = track(layout, "stream", 0, 0);
  ASSERT_NE(tr, nullptr) << layout.dump();
  expect_gap_shading(img, layout, *tr, gap.start, gap.end, gap_color(gap.cause), inside_before, inside_after);
}

// The synthetic job the job tests view: four ranks, one of them late.
struct StragglerJob {
  std::string dir;
  PlantedJob planted;
  int finding = 0;  // the number `loupe analyze` gives its straggler finding (from 1), 0 if none
  TimeRange late;   // that finding's first late collective
};

StragglerJob write_straggler_job(const std::string& dir) {
  StragglerJob job{.dir = dir, .planted = write_synthetic_job(dir, {.ranks = 4, .events = 3'000, .seed = 6})};
  JobReport report = analyze_job(dir);
  for (size_t i = 0; i < report.findings.size(); ++i) {
    if (report.findings[i].rule == "straggler") {
      job.finding = int(i) + 1;
      job.late = report.findings[i].ranges.front();
      break;
    }
  }
  return job;
}

// A job: one row per rank, on the aligned timeline. With the straggler
// finding selected, the view shows its first late collective: every other
// rank's row holds its wait there, the straggler's row is empty (it has
// not arrived), and once it arrives every row holds the same transfer.
TEST_F(ViewerScreenshot, JobShowsEachRankAndTheStragglersLateArrival) {
  const auto [job, p, straggler_finding, late] = write_straggler_job(dir_.file("job"));
  ASSERT_GT(straggler_finding, 0);
  ASSERT_EQ(late.end - late.start, p.delay_ns);

  nlohmann::json layout;
  std::string png = dir_.file("job.png");
  test::CommandResult r = view(
      {job, "--screenshot", png, "--size", "1200x700", "--select-finding", std::to_string(straggler_finding)}, &layout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(layout.is_object()) << r.out;
  Image img = load_png(png);
  expect_not_blank(img);
  ASSERT_EQ(layout["tracks"].size(), 4u);
  std::vector<int> rows;
  for (uint32_t k = 0; k < 4; ++k) {
    const nlohmann::json* tr = track(layout, "stream", k, 0);
    ASSERT_NE(tr, nullptr) << layout.dump();
    EXPECT_EQ((*tr)["title"], "rank " + std::to_string(k));
    rows.push_back(int(((*tr)["y0"].get<float>() + (*tr)["y1"].get<float>()) / 2));
  }
  TimeAxis axis = axis_of(layout);
  int waiting = int(axis.x(double(late.start + late.end) / 2));
  int transfer = int(axis.x(double(late.end))) + 4;
  ASSERT_GT(waiting, int(axis.x0));
  ASSERT_LT(transfer, int(axis.x0 + axis.width));
  int other = p.straggler == 0 ? 1 : 0;
  Color wait_color = img.at(waiting, rows[size_t(other)]);
  for (int64_t k = 0; k < 4; ++k) {
    Color at_wait = img.at(waiting, rows[size_t(k)]);
    if (k == p.straggler) {
      EXPECT_FALSE(same_rgb(at_wait, wait_color)) << "the straggler has not arrived: its row is empty there";
    } else {
      EXPECT_TRUE(same_rgb(at_wait, wait_color)) << "rank " << k << " waits for the straggler";
    }
    EXPECT_TRUE(same_rgb(img.at(transfer, rows[size_t(k)]), img.at(transfer, rows[0])))
        << "rank " << k << ": every rank transfers once the last has arrived";
  }
  EXPECT_FALSE(same_rgb(img.at(transfer, rows[0]), wait_color)) << "the transfer is drawn apart from the wait";
}

// Expanding the straggler shows its own trace's tracks under its row, on
// the job's clock: while the other ranks wait for it, its compute stream is
// still busy with the kernel that made it late.
TEST_F(ViewerScreenshot, AnExpandedRankShowsItsOwnTracksUnderItsRow) {
  const auto [job, p, straggler_finding, late] = write_straggler_job(dir_.file("job"));
  ASSERT_GT(straggler_finding, 0);

  nlohmann::json layout;
  std::string png = dir_.file("expanded.png");
  test::CommandResult r = view({job, "--screenshot", png, "--size", "1200x800", "--select-finding",
                                std::to_string(straggler_finding), "--expand-rank", std::to_string(p.straggler)},
                               &layout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(layout.is_object()) << r.out;
  Image img = load_png(png);
  expect_not_blank(img);

  // The rows in order: the straggler's row, then its own tracks, then the
  // next rank's row.
  const std::string own = "rank " + std::to_string(p.straggler) + " / ";
  std::vector<std::string> titles;
  const nlohmann::json* compute = nullptr;
  for (const auto& t : layout["tracks"]) {
    std::string title = t["title"];
    titles.push_back(title);
    if (title.starts_with(own) && title.ends_with(" / compute")) compute = &t;
  }
  auto at = [&](const std::string& title) { return std::find(titles.begin(), titles.end(), title) - titles.begin(); };
  long row = at("rank " + std::to_string(p.straggler));
  ASSERT_LT(row, long(titles.size()));
  long mine = 0;
  for (long i = row + 1; i < long(titles.size()) && titles[size_t(i)].starts_with(own); ++i) ++mine;
  EXPECT_GE(mine, 3) << "its thread and its two streams follow its row";
  for (int64_t k = 0; k < 4; ++k) {
    if (k == p.straggler) continue;
    long other = at("rank " + std::to_string(k));
    EXPECT_TRUE(other < row || other > row + mine) << "rank " << k << " sits among rank " << p.straggler << "'s tracks";
  }
  ASSERT_NE(compute, nullptr) << layout.dump();

  TimeAxis axis = axis_of(layout);
  int waiting = int(axis.x(double(late.start + late.end) / 2));
  ASSERT_GT(waiting, int(axis.x0));
  int compute_y = int(((*compute)["y0"].get<float>() + (*compute)["y1"].get<float>()) / 2);
  int other = p.straggler == 0 ? 1 : 0;
  const nlohmann::json* other_row = track(layout, "stream", uint32_t(other), 0);
  ASSERT_NE(other_row, nullptr);
  Color wait_color = img.at(waiting, int(((*other_row)["y0"].get<float>() + (*other_row)["y1"].get<float>()) / 2));
  Color busy = img.at(waiting, compute_y);
  EXPECT_FALSE(same_rgb(busy, palette::background)) << "the straggler still computes while the others wait";
  EXPECT_FALSE(same_rgb(busy, wait_color));

  test::CommandResult bad = view({job, "--screenshot", dir_.file("bad.png"), "--expand-rank", "99"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--expand-rank 99: rank 99: "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("has no rank 99"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.file("bad.png")));
}

// A memory event of device 0, `total` allocated after it, 512 B reserved.
void add_memory(TraceWriter& w, int64_t t, MemoryEventKind kind, int64_t bytes, uint64_t addr, int64_t total,
                uint32_t site) {
  w.add(MemoryEventRow{.device = 0,
                       .time = t,
                       .kind = kind,
                       .bytes = bytes,
                       .address = addr,
                       .allocated = total,
                       .reserved = 512,
                       .callsite = site});
}

// Device memory written by hand: 100 B from model.py:3 at 1 ms, 300 B from
// train.py:9 at 2 ms, the first freed at 5 ms. A click on the memory lane
// at 3 ms lists 400 B live, 300 B from train.py:9 first; at 6 ms, 300 B.
TEST_F(ViewerScreenshot, AClickOnAMemoryLaneListsWhatWasLiveThen) {
  std::string trace = dir_.file("memory.db");
  {
    TraceWriter w(trace, {});
    w.put(DeviceRow{.id = 0, .name = "gpu", .kind = DeviceKind::cuda, .memory_capacity = 1000, .copy_bandwidth = 0});
    w.put(CallSiteRow{.id = 1, .file = w.intern("model.py"), .line = 3, .function = w.intern("forward")});
    w.put(CallSiteRow{.id = 2, .file = w.intern("train.py"), .line = 9, .function = w.intern("step")});
    add_memory(w, 1'000'000, MemoryEventKind::alloc, 100, 0x10, 100, 1);
    add_memory(w, 2'000'000, MemoryEventKind::alloc, 300, 0x20, 400, 2);
    add_memory(w, 5'000'000, MemoryEventKind::free, 100, 0x10, 300, 1);
    add_memory(w, 8'000'000, MemoryEventKind::free, 300, 0x20, 0, 2);
    w.set_meta("status", "complete");
    w.close();
  }
  nlohmann::json layout;
  ASSERT_EQ(view({trace, "--screenshot", dir_.file("a.png"), "--size", "1000x600"}, &layout).exit_code, 0);
  const nlohmann::json* tr = track(layout, "memory", 0, 0);
  ASSERT_NE(tr, nullptr) << layout.dump();
  TimeAxis axis = axis_of(layout);
  int y = int(((*tr)["y0"].get<float>() + (*tr)["y1"].get<float>()) / 2);
  auto click_at = [&](int64_t t) {
    nlohmann::json picked;
    std::string at = std::to_string(int(axis.x(double(t)))) + "," + std::to_string(y);
    test::CommandResult r =
        view({trace, "--screenshot", dir_.file("b.png"), "--size", "1000x600", "--click", at}, &picked);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return picked.contains("memory_pick") ? picked["memory_pick"] : nlohmann::json();
  };
  nlohmann::json at3 = click_at(3'000'000);
  ASSERT_FALSE(at3.is_null()) << "the click on the memory lane picked nothing";
  EXPECT_EQ(at3["allocated"], 400);
  ASSERT_EQ(at3["sites"].size(), 2u);
  EXPECT_EQ(at3["sites"][0]["site"], "train.py:9");
  EXPECT_EQ(at3["sites"][0]["bytes"], 300);
  EXPECT_EQ(at3["sites"][1]["site"], "model.py:3");
  nlohmann::json at6 = click_at(6'000'000);
  EXPECT_EQ(at6["allocated"], 300);
  EXPECT_EQ(at6["sites"].size(), 1u);
}

// Memory by category, written by hand: 600 B made inside Adam's step at
// 1.5 ms and kept (its state), then 300 B made outside any op at 3 ms
// (nothing tells what for). From 3 ms the lane stacks the optimizer's
// state, green, under the rest, blue: at 4 ms the lane's lowest row is
// green and the row at 80% of its height blue.
TEST_F(ViewerScreenshot, TheMemoryLaneStacksItsBlocksByCategory) {
  std::string trace = dir_.file("categories.db");
  {
    TraceWriter w(trace, {});
    w.put(DeviceRow{.id = 0, .name = "gpu", .kind = DeviceKind::cuda, .memory_capacity = 1000, .copy_bandwidth = 0});
    w.put(ThreadRow{.id = 0, .process = 1, .os_tid = 1, .name = "main", .dropped_events = 0});
    w.add(HostSpanRow{.thread = 0,
                      .start = 1'000'000,
                      .dur = 1'000'000,
                      .name = w.intern("Optimizer.step#Adam.step"),
                      .kind = SpanKind::user,
                      .depth = 0,
                      .callsite = 0});
    add_memory(w, 1'500'000, MemoryEventKind::alloc, 600, 0x10, 600, 0);
    add_memory(w, 3'000'000, MemoryEventKind::alloc, 300, 0x20, 900, 0);
    add_memory(w, 8'000'000, MemoryEventKind::free, 300, 0x20, 600, 0);
    w.set_meta("status", "complete");
    w.close();
  }
  nlohmann::json layout;
  std::string png = dir_.file("categories.png");
  ASSERT_EQ(view({trace, "--screenshot", png, "--size", "1000x600"}, &layout).exit_code, 0);
  const nlohmann::json* tr = track(layout, "memory", 0, 0);
  ASSERT_NE(tr, nullptr) << layout.dump();
  EXPECT_EQ((*tr)["categories"], nlohmann::json::array({"optimizer state"}));
  Image img = load_png(png);
  ASSERT_GT(img.width, 0);
  TimeAxis axis = axis_of(layout);
  int x = int(axis.x(4'000'000.0));
  float y1 = (*tr)["y1"].get<float>();
  // The plot's scale tops at 1.05 x the capacity, 1050 B; 900 B fill 86%.
  float plot = y1 - ((*tr)["y0"].get<float>() + view::TrackMetrics{}.legend + 2);
  Color low = img.at(x, int(y1) - 3), high = img.at(x, int(y1 - 0.8f * plot));
  EXPECT_TRUE(green_of(low) > red_of(low) && green_of(low) > blue_of(low)) << std::hex << low;
  EXPECT_TRUE(blue_of(high) > red_of(high) && blue_of(high) > green_of(high)) << std::hex << high;
}

TEST_F(ViewerScreenshot, CompareShowsBothTracesAndTheDiff) {
  std::string a = write_gap_trace(dir_.file("a.db"));
  std::string b = write_gap_trace(dir_.file("b.db"));
  nlohmann::json layout;
  std::string png = dir_.file("compare.png");
  test::CommandResult r =
      view({a, "--compare", b, "--screenshot", png, "--size", "1000x800", "--panel", "diff"}, &layout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(track(layout, "stream", 0, 0, 0), nullptr);
  ASSERT_NE(track(layout, "stream", 0, 0, 1), nullptr);
  EXPECT_LT((*track(layout, "stream", 0, 0, 0))["y1"].get<float>(),
            (*track(layout, "stream", 0, 0, 1))["y0"].get<float>())
      << "base above head";
  expect_not_blank(load_png(png));
}

// `loupe-view trace.json.gz`: a PyTorch trace opens as it is, and shows
// what the trace `loupe import` makes of it shows, track for track.
TEST_F(ViewerScreenshot, AKinetoJsonOpensAsItsImportedTrace) {
  std::string json = LOUPE_KINETO_CPU_TRACE;
  std::string db = dir_.file("imported.db");
  ASSERT_EQ(test::run_command({LOUPE_BIN, "import", json, "-o", db, "-q"}, dir_.path().string()).exit_code, 0);
  setenv("LOUPE_CACHE_DIR", dir_.file("cache").c_str(), 1);
  nlohmann::json direct, imported;
  std::string png = dir_.file("json.png");
  test::CommandResult r = view({json, "--screenshot", png, "--size", "1000x700"}, &direct);
  unsetenv("LOUPE_CACHE_DIR");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(view({db, "--screenshot", dir_.file("db.png"), "--size", "1000x700"}, &imported).exit_code, 0);
  ASSERT_GE(direct["tracks"].size(), 2u) << direct.dump();
  EXPECT_EQ(direct["tracks"], imported["tracks"]);
  EXPECT_EQ(direct["axis"], imported["axis"]);
  expect_not_blank(load_png(png));
}

TEST_F(ViewerScreenshot, BadInputFailsWithTheReadersMessage) {
  std::string png = dir_.file("x.png");
  std::string junk = dir_.file("junk.db");
  { std::ofstream(junk) << "not a trace"; }
  test::CommandResult r = view({junk, "--screenshot", png});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("junk.db: not a loupe trace"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(png));

  r = view({write_gap_trace(dir_.file("g.db")), "--screenshot", png, "--select-finding", "99"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--select-finding 99"), std::string::npos) << r.err;

  r = view({junk, "--screenshot", png, "--size", "big"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--size: `big` is not WxH"), std::string::npos) << r.err;
}

TEST_F(ViewerScreenshot, AFileThatFailsToOpenShowsTheErrorInTheWindow) {
  // What the desktop viewer shows (LOUPE_VIEW_SHOW_ERRORS makes --screenshot
  // draw it rather than exit): the reader's message in red, no crash.
  std::string junk = dir_.file("junk.db");
  { std::ofstream(junk) << "not a trace"; }
  std::string png = dir_.file("error.png");
  setenv("LOUPE_VIEW_SHOW_ERRORS", "1", 1);
  test::CommandResult r = view({junk, "--screenshot", png, "--size", "800x300"});
  unsetenv("LOUPE_VIEW_SHOW_ERRORS");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Image img = load_png(png);
  ASSERT_EQ(img.width, 800);
  size_t reddish = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      Color c = img.at(x, y);
      reddish += red_of(c) > 200 && green_of(c) < 140 && blue_of(c) < 140;
    }
  }
  EXPECT_GT(reddish, 200u) << "the error text is drawn in red";
}

}  // namespace
}  // namespace loupe::view
