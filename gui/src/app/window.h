// The GLFW window with its OpenGL 3 context and Dear ImGui on top.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct GLFWwindow;

namespace loupe::app {

struct WindowOptions {
  int width = 1600, height = 900;
  bool visible = true;
  std::string title = "loupe-view";
};

class Window {
 public:
  // Throws std::runtime_error naming what failed (no display, no OpenGL 3).
  explicit Window(const WindowOptions& options);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  bool should_close() const;
  // Blocks until an event arrives (or `timeout` seconds pass when > 0).
  void wait_events(double timeout);
  void poll_events();
  // The backends' and ImGui's NewFrame; `button_down` holds the left button
  // down this frame (a scripted click); `mouse` (window pixels) replaces
  // the pointer's position when given, for headless runs.
  void begin_frame(const float* mouse = nullptr, bool button_down = false);
  void end_frame();   // ImGui::Render, then draw_frame
  void draw_frame();  // draws ImGui's draw data into the back buffer
  void swap();
  // One frame at the framebuffer's size: begin_frame(mouse, button_down),
  // then draw(width, height), then end_frame.
  template <typename Draw>
  void frame(Draw&& draw, const float* mouse = nullptr, bool button_down = false) {
    int w = 0, h = 0;
    framebuffer_size(&w, &h);
    begin_frame(mouse, button_down);
    draw(float(w), float(h));
    end_frame();
  }
  // The back buffer as RGBA rows, top row first.
  std::vector<uint8_t> read_pixels(int* width, int* height) const;
  void framebuffer_size(int* width, int* height) const;
  void set_title(const std::string& title);
  // Files dropped on the window since the last call.
  std::vector<std::string> take_dropped_files();
  // Wakes a thread blocked in wait_events (callable from any thread).
  static void post_empty_event();
  GLFWwindow* handle() const { return window_; }

 private:
  GLFWwindow* window_ = nullptr;
  std::vector<std::string> dropped_;
};

// A window, or null after saying on stderr why none opened.
std::unique_ptr<Window> open_window(const WindowOptions& options);

}  // namespace loupe::app
