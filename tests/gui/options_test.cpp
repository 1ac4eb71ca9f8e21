// loupe-view's command line and its recent-files list.
#include <gtest/gtest.h>

#include <cstdlib>

#include "loupe/view/options.h"
#include "loupe/view/recent_files.h"
#include "profiler/test_files.h"

namespace loupe::view {
namespace {

TEST(ViewOptions, ParsesEveryOption) {
  ViewOptions o = parse_view_options({"a.db", "--compare", "b.db", "--screenshot", "o.png", "--size", "800x600",
                                      "--zoom", "100:2000", "--select-finding", "2"});
  EXPECT_EQ(o.file, "a.db");
  EXPECT_EQ(o.compare, "b.db");
  EXPECT_EQ(o.screenshot, "o.png");
  EXPECT_EQ(o.width, 800);
  EXPECT_EQ(o.height, 600);
  EXPECT_TRUE(o.zoom_given);
  EXPECT_EQ(o.zoom_start, 100);
  EXPECT_EQ(o.zoom_end, 2000);
  EXPECT_EQ(o.select_finding, 2);
  EXPECT_EQ(parse_view_options({"a.db", "--bench-frames", "200"}).bench_frames, 200);
  o = parse_view_options({"a.db", "--screenshot", "o.png", "--mouse", "10,20"});
  EXPECT_TRUE(o.mouse_given);
  EXPECT_EQ(o.mouse_x, 10);
  EXPECT_EQ(o.mouse_y, 20);
  EXPECT_TRUE(parse_view_options({}).file.empty());
  o = parse_view_options({"job", "--expand-rank", "3", "--expand-rank", "5"});
  EXPECT_EQ(o.expand_ranks, (std::vector<int64_t>{3, 5}));
}

TEST(ViewOptions, RejectsBadArgumentsNamingThem) {
  auto message = [](std::vector<std::string> args) {
    try {
      parse_view_options(args);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(message({"a.db", "--size", "800"}), "--size: `800` is not WxH (e.g. 1280x720)");
  EXPECT_EQ(message({"a.db", "--size", "80x"}), "--size height: `` is not an integer");
  EXPECT_EQ(message({"a.db", "--zoom", "5:3"}), "--zoom: the end must be after the start in `5:3`");
  EXPECT_EQ(message({"a.db", "--frobnicate"}), "unknown option --frobnicate");
  EXPECT_EQ(message({"a.db", "--screenshot"}), "--screenshot needs a value");
  EXPECT_EQ(message({"--screenshot", "x.png"}), "--screenshot needs a trace to show");
  EXPECT_EQ(message({"a.db", "b.db"}), "one trace only (`b.db`); use --compare HEAD for a second");
  EXPECT_EQ(message({"a.db", "--select-finding", "0"}), "--select-finding: findings are numbered from 1");
  EXPECT_EQ(message({"a.db", "--mouse", "3,4"}), "--mouse goes with --screenshot");
  EXPECT_EQ(message({"job", "--expand-rank", "x"}), "--expand-rank: `x` is not an integer");
  EXPECT_EQ(message({"--expand-rank", "2"}), "--expand-rank needs a job to show");
  EXPECT_EQ(message({"a.db", "--panel", "x"}), "--panel: `x` is none of findings, statistics, compiles, details, diff");
}

TEST(RecentFiles, MostRecentFirstWithoutDuplicatesPersisted) {
  test::TempDir dir;
  setenv("XDG_CONFIG_HOME", dir.path().c_str(), 1);
  std::string path = recent_files_path();
  EXPECT_EQ(path, dir.file("loupe/recent-files"));
  EXPECT_TRUE(load_recent_files(path).empty());
  std::vector<std::string> list;
  list = add_recent_file(list, "/t/a.db");
  list = add_recent_file(list, "/t/b.db");
  list = add_recent_file(list, "/t/a.db");
  EXPECT_EQ(list, (std::vector<std::string>{"/t/a.db", "/t/b.db"}));
  for (int i = 0; i < 20; ++i) list = add_recent_file(list, "/t/" + std::to_string(i) + ".db");
  EXPECT_EQ(list.size(), kMaxRecentFiles);
  EXPECT_EQ(list[0], "/t/19.db");
  ASSERT_TRUE(save_recent_files(path, list));
  EXPECT_EQ(load_recent_files(path), list);
  unsetenv("XDG_CONFIG_HOME");
}

}  // namespace
}  // namespace loupe::view
