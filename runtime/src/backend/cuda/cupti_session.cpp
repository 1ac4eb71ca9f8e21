#include "backend/cuda/cupti_session.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "loupe/prof/capture.h"
#include "loupe/prof/cupti.h"
#include "loupe/prof/record.h"

namespace loupe::rt::backend::cuda {

namespace {

struct Session {
  std::mutex mu;
  std::unique_ptr<prof::CuptiCollector> collector;
  std::atomic<bool> running{false};
  bool gave_up = false;
  bool hooked = false;
};

Session& session() {
  static Session* s = new Session;  // used until exit
  return *s;
}

}  // namespace

// Before a capture stops: hand everything CUPTI holds to it, and stop.
void cupti_session_stop() {
  Session& s = session();
  std::lock_guard lock(s.mu);
  s.running.store(false, std::memory_order_release);
  s.collector.reset();
}

namespace {

bool disabled(std::string* why) {
  const char* env = std::getenv("LOUPE_CUPTI");
  if (env != nullptr && std::strcmp(env, "0") == 0) {
    *why = "LOUPE_CUPTI=0";
    return true;
  }
  const char* inject = std::getenv("CUDA_INJECTION64_PATH");
  if (inject != nullptr && std::strstr(inject, "loupe_inject") != nullptr) {
    *why = "libloupe_inject.so records CUPTI in this process (loupe capture)";
    return true;
  }
  return false;
}

}  // namespace

void cupti_session_attach() {
  Session& s = session();
  {
    std::lock_guard lock(s.mu);
    if (s.hooked) return;
    s.hooked = true;
  }
  prof::on_capture_start([] { cupti_session_recording(); });
  prof::on_capture_stop(cupti_session_stop);
  cupti_session_recording();  // a capture may be recording already
}

bool cupti_session_recording() {
  Session& s = session();
  if (s.running.load(std::memory_order_acquire)) return true;
  if (!prof::capturing()) return false;
  std::lock_guard lock(s.mu);
  if (s.collector) return true;
  if (s.gave_up) return false;
  std::string why;
  if (!disabled(&why)) s.collector = prof::CuptiCollector::start({}, &why);
  if (!s.collector) {
    std::fprintf(stderr, "loupe: no CUPTI (%s): GPU times come from CUDA events\n", why.c_str());
    s.gave_up = true;
    return false;
  }
  s.running.store(true, std::memory_order_release);
  return true;
}

}  // namespace loupe::rt::backend::cuda
