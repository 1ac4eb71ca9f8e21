// The GPUs the loupe runtime records itself (CuptiCollector::adopt_device):
// CUPTI's records of them are renumbered to the runtime's device and
// stream ids, and their allocation records dropped; and the GPUs whose
// memory a framework's allocator records (leave_memory), whose allocation
// records are dropped too. Plain data, so that
// tests can check the renumbering on hand-built batches.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "record/external_events.h"

namespace loupe::prof::cupti {

class Adoption {
 public:
  void adopt_device(uint32_t cuda_device, uint32_t trace_device);
  // `cupti_stream` is CUPTI's id of the stream.
  void adopt_stream(uint32_t cuda_device, uint32_t cupti_stream, uint32_t trace_stream);
  // While `on`, CUPTI's allocation records of a GPU are left out: a
  // framework's allocator records that GPU's memory itself.
  void leave_memory(uint32_t cuda_device, bool on);
  // Renumbers and filters one converted batch.
  void apply(detail::ExternalEvents& batch) const;
  bool empty() const;

 private:
  mutable std::mutex mu_;
  std::map<uint32_t, uint32_t> devices_;                       // CUDA ordinal -> trace device
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> streams_;  // (CUDA ordinal, CUPTI stream) -> trace stream
  std::set<uint32_t> memory_elsewhere_;                        // CUDA ordinals whose memory a framework records
};

// The process's adoptions.
Adoption& adoption();

}  // namespace loupe::prof::cupti
