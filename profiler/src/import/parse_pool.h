// Worker threads that parse a JSON trace's batches.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "import/event_parser.h"
#include "import/json_batch.h"

namespace loupe::prof::import {

// Worker threads parsing batches; results are taken back in submission
// order, so the trace is the same whatever the number of threads.
class ParsePool {
 public:
  explicit ParsePool(size_t workers) {
    for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~ParsePool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ParsePool(const ParsePool&) = delete;
  ParsePool& operator=(const ParsePool&) = delete;

  void submit(Batch* batch) {
    {
      std::lock_guard lock(mu_);
      todo_.push_back(batch);
      order_.push_back(batch);
    }
    ready_.notify_one();
  }
  size_t in_flight() {
    std::lock_guard lock(mu_);
    return order_.size();
  }
  // The oldest outstanding batch, once parsed; nullptr if none.
  Batch* next_done() {
    std::unique_lock lock(mu_);
    if (order_.empty()) return nullptr;
    Batch* b = order_.front();
    done_cv_.wait(lock, [&] { return done_.count(b) > 0; });
    done_.erase(b);
    order_.pop_front();
    return b;
  }

 private:
  void work() {
    EventParser parser;
    for (;;) {
      Batch* b = nullptr;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return stop_ || !todo_.empty(); });
        if (todo_.empty()) return;  // stopping
        b = todo_.front();
        todo_.pop_front();
      }
      parser.parse(*b);
      {
        std::lock_guard lock(mu_);
        done_.insert(b);
      }
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_, done_cv_;
  std::deque<Batch*> todo_, order_;
  std::set<Batch*> done_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace loupe::prof::import
