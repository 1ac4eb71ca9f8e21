#include "window.h"

#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <GLFW/glfw3.h>

#include <cstdio>
#include <stdexcept>

#include "loupe/view/palette.h"

namespace loupe::app {

namespace {

std::string g_glfw_error;

void on_glfw_error(int, const char* description) { g_glfw_error = description ? description : "unknown error"; }

void on_drop(GLFWwindow* w, int count, const char** paths) {
  auto* self = static_cast<std::vector<std::string>*>(glfwGetWindowUserPointer(w));
  for (int i = 0; i < count; ++i) self->push_back(paths[i]);
}

void apply_style() {
  ImGui::StyleColorsDark();
  ImGuiStyle& st = ImGui::GetStyle();
  st.WindowRounding = 0;
  st.FrameRounding = 2;
  st.ScrollbarSize = 14;
  st.WindowPadding = ImVec2(6, 6);
  st.ItemSpacing = ImVec2(6, 4);
  st.Colors[ImGuiCol_WindowBg] = ImGui::ColorConvertU32ToFloat4(view::palette::background);
}

}  // namespace

Window::Window(const WindowOptions& o) {
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    throw std::runtime_error("cannot start GLFW: " + (g_glfw_error.empty() ? "no display?" : g_glfw_error) +
                             " (set DISPLAY, or run under xvfb-run for headless use)");
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_VISIBLE, o.visible ? GLFW_TRUE : GLFW_FALSE);
  window_ = glfwCreateWindow(o.width, o.height, o.title.c_str(), nullptr, nullptr);
  if (!window_) {
    std::string why = g_glfw_error;
    glfwTerminate();
    throw std::runtime_error("cannot open an OpenGL 3.3 window: " + why);
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(1);
  glfwSetWindowUserPointer(window_, &dropped_);
  glfwSetDropCallback(window_, on_drop);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is fixed; nothing to remember
  apply_style();
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
}

Window::~Window() {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

bool Window::should_close() const { return glfwWindowShouldClose(window_); }

void Window::wait_events(double timeout) {
  if (timeout > 0) glfwWaitEventsTimeout(timeout);
  else glfwWaitEvents();
}

void Window::poll_events() { glfwPollEvents(); }

void Window::post_empty_event() { glfwPostEmptyEvent(); }

void Window::begin_frame(const float* mouse, bool button_down) {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (mouse) ImGui::GetIO().MousePos = ImVec2(mouse[0], mouse[1]);
  if (button_down) ImGui::GetIO().MouseDown[ImGuiMouseButton_Left] = true;
  ImGui::NewFrame();
}

void Window::end_frame() {
  ImGui::Render();
  draw_frame();
}

void Window::draw_frame() {
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  glViewport(0, 0, w, h);
  ImVec4 bg = ImGui::ColorConvertU32ToFloat4(view::palette::background);
  glClearColor(bg.x, bg.y, bg.z, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

void Window::swap() { glfwSwapBuffers(window_); }

void Window::set_title(const std::string& title) { glfwSetWindowTitle(window_, title.c_str()); }

void Window::framebuffer_size(int* width, int* height) const { glfwGetFramebufferSize(window_, width, height); }

std::vector<uint8_t> Window::read_pixels(int* width, int* height) const {
  glfwGetFramebufferSize(window_, width, height);
  const size_t row = size_t(*width) * 4;
  std::vector<uint8_t> pixels(row * size_t(*height));
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, *width, *height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL's rows run bottom to top; images' top to bottom.
  std::vector<uint8_t> flipped(pixels.size());
  for (int y = 0; y < *height; ++y) {
    std::copy_n(pixels.begin() + std::ptrdiff_t(size_t(*height - 1 - y) * row), row,
                flipped.begin() + std::ptrdiff_t(size_t(y) * row));
  }
  return flipped;
}

std::vector<std::string> Window::take_dropped_files() {
  std::vector<std::string> out;
  out.swap(dropped_);
  return out;
}

std::unique_ptr<Window> open_window(const WindowOptions& options) {
  try {
    return std::make_unique<Window>(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loupe-view: %s\n", e.what());
    return nullptr;
  }
}

}  // namespace loupe::app
