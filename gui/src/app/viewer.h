// The viewer: the traces it has open, the work it does on them in the
// background (reading, analysing, comparing), and the window it draws each
// frame with Dear ImGui.
#pragma once

#include <array>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "view_state.h"

namespace loupe::app {

class Viewer {
 public:
  // `wake` is called from worker threads when a result is ready (so that a
  // window waiting for events draws it).
  explicit Viewer(std::function<void()> wake);
  ~Viewer();

  // Opens a trace, or two to compare, in the background; replaces what is open.
  void open(const std::string& base, const std::string& head = "");
  // Collects finished work; true when anything arrived.
  bool poll();
  // Whether work is under way.
  bool busy() const;
  // Blocks until every job is done, collecting the results.
  void finish_jobs();
  // Waits for loading only (analyses may still run).
  void finish_loading();

  // Expands or collapses a rank of the job open as document `doc`. False,
  // with the reason in `why`, when it cannot: not a job, the analysis
  // still running (try again), or the rank's trace unreadable.
  bool toggle_rank(int doc, int64_t rank, std::string* why);

  // Builds one frame of the window, `width` x `height` pixels.
  void frame(float width, float height);

  ViewState& state() { return s_; }
  // Whether opened traces go into the recent-files list (the desktop does;
  // headless runs do not).
  void set_remember_recent(bool on) { remember_recent_ = on; }

 private:
  void start_analysis(int i);
  void retire();
  void frame_menu();
  void frame_status();
  void frame_open_popup();
  void frame_panels(float height);
  void remember(const std::string& path);

  ViewState s_;
  bool remember_recent_ = false;
  std::function<void()> wake_;
  std::array<std::future<std::unique_ptr<Document>>, 2> loading_;
  std::array<std::future<std::shared_ptr<Analysis>>, 2> analysing_;
  std::future<prof::TraceDiff> diffing_;
  // What a new open replaced while work on it was still under way: kept
  // (the work reads its documents) until the work ends, off the UI's way.
  struct Retired {
    std::array<std::unique_ptr<Document>, 2> docs;
    std::array<std::future<std::unique_ptr<Document>>, 2> loading;
    std::array<std::future<std::shared_ptr<Analysis>>, 2> analysing;
    std::future<prof::TraceDiff> diffing;
    bool done() const;
  };
  std::vector<Retired> retired_;
};

}  // namespace loupe::app
