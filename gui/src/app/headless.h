// loupe-view's headless modes: --screenshot (render once, write a PNG)
// and --bench-frames (time to first frame and frame build times).
#pragma once

#include <chrono>

#include "loupe/view/options.h"

namespace loupe::app {

// Exit codes: 0 written; 2 a bad argument or a trace that cannot be read;
// 1 anything else (no display, the PNG cannot be written).
int run_screenshot(const view::ViewOptions& o);
int run_bench_frames(const view::ViewOptions& o, std::chrono::steady_clock::time_point process_start);

}  // namespace loupe::app
