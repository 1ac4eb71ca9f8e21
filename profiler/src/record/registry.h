// The process-wide registry behind the record API: every thread's ring,
// interned strings, call sites, devices, streams, and queued compile
// events. Capture reads it; the record API's slow paths write it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loupe/prof/record.h"
#include "record/external_events.h"

namespace loupe::prof::detail {

// A ring's slots, from std::aligned_alloc: large blocks come straight from
// the kernel as untouched pages, which are faulted in as the ring fills
// instead of all at once when the thread first records.
struct FreeSlots {
  void operator()(RawEvent* p) const { std::free(p); }
};
using RingSlots = std::unique_ptr<RawEvent, FreeSlots>;

struct ThreadEntry {
  uint32_t id = 0;  // dense, in order of registration
  int64_t process = 0, os_tid = 0;
  std::string name;
  RingSlots storage;
  Ring ring;
  bool has_ring = false;
  bool retired = false;       // the thread exited; freed once drained
  uint64_t dropped_base = 0;  // ring.dropped when the current capture began
};

struct CallSiteEntry {
  const char* file;
  const char* function;
  uint32_t line;
  CallSiteId parent;
};

struct QueuedCompile {
  uint32_t thread;
  Compile event;
};

class Registry {
 public:
  static Registry& get();

  // A producer whose ring is half full asks the capture's drainer to run
  // now (request_drain); the drainer waits on drain_cv between drains.
  // drain_mu guards only the drainer's entry into its wait, so that a
  // request is never missed; it is not mu, which a producer must never
  // wait for.
  std::atomic<bool> drain_requested{false};
  std::mutex drain_mu;
  std::condition_variable drain_cv;

  std::mutex mu;
  // Everything below is guarded by mu.
  std::vector<std::unique_ptr<ThreadEntry>> threads;
  uint32_t next_thread_id = 0;
  uint32_t ring_capacity = 1u << 15;
  bool capture_active = false;  // a capture may be reading rings: free none
  uint64_t version = 0;         // bumped when names, devices or streams change

  std::unordered_set<std::string> strings;
  std::vector<CallSiteEntry> callsites;  // id - 1
  std::unordered_map<std::string, CallSiteId> callsite_ids;
  std::vector<DeviceInfo> devices;
  struct Stream {
    uint32_t device, stream;
    std::string name;
  };
  std::vector<Stream> streams;
  std::map<std::string, std::string> notes;  // meta entries a recorder adds (note_meta)
  std::vector<QueuedCompile> compiles;
  std::vector<ExternalEvents> external;

  // The calling thread's entry, created on first use (mu must be held).
  ThreadEntry& this_thread_locked();
  // The entry of an OS thread, created (without a ring) if it never
  // recorded through the ring (mu must be held).
  ThreadEntry& thread_by_os_tid_locked(int64_t os_tid);
};

// Wakes the capture's drainer (once until it has drained).
void request_drain();

}  // namespace loupe::prof::detail
