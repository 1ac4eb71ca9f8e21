// loupe-view's command line.
//
//   loupe-view [FILE] [--compare HEAD] [--screenshot OUT.png] [--size WxH]
//              [--zoom START_NS:END_NS] [--select-finding N] [--panel NAME]
//              [--mouse X,Y] [--expand-rank R]... [--bench-frames N]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loupe::view {

struct ViewOptions {
  std::string file;     // empty: start with no trace
  std::string compare;  // --compare HEAD
  std::string screenshot;
  int width = 1600, height = 900;
  bool size_given = false;
  bool zoom_given = false;
  int64_t zoom_start = 0, zoom_end = 0;
  int select_finding = 0;  // 1-based, as `loupe analyze` numbers them; 0: none
  int bench_frames = 0;
  std::string panel;         // --panel: the tab shown first (panel_list.h names them)
  bool mouse_given = false;  // --mouse X,Y: where the pointer rests in a screenshot
  bool click_given = false;  // --click X,Y: a left click there before the screenshot
  float click_x = 0, click_y = 0;
  std::vector<int64_t> expand_ranks;  // --expand-rank R: a job's ranks shown with their own tracks
  float mouse_x = 0, mouse_y = 0;
  bool help = false;
};

// Parses argv[1..]; throws std::invalid_argument with a message naming the
// argument that is wrong.
ViewOptions parse_view_options(const std::vector<std::string>& args);

std::string view_usage();

}  // namespace loupe::view
