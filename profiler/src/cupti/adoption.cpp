#include "cupti/adoption.h"

#include <algorithm>

namespace loupe::prof::cupti {

void Adoption::adopt_device(uint32_t cuda_device, uint32_t trace_device) {
  std::lock_guard lock(mu_);
  devices_[cuda_device] = trace_device;
}

void Adoption::adopt_stream(uint32_t cuda_device, uint32_t cupti_stream, uint32_t trace_stream) {
  std::lock_guard lock(mu_);
  streams_[{cuda_device, cupti_stream}] = trace_stream;
}

void Adoption::leave_memory(uint32_t cuda_device, bool on) {
  std::lock_guard lock(mu_);
  if (on) {
    memory_elsewhere_.insert(cuda_device);
  } else {
    memory_elsewhere_.erase(cuda_device);
  }
}

bool Adoption::empty() const {
  std::lock_guard lock(mu_);
  return devices_.empty();
}

void Adoption::apply(detail::ExternalEvents& batch) const {
  std::lock_guard lock(mu_);
  std::erase_if(batch.memory, [&](const auto& m) { return memory_elsewhere_.count(m.device) != 0; });
  if (devices_.empty()) return;
  auto adopted = [&](uint32_t d) { return devices_.count(d) != 0; };
  for (auto& op : batch.ops) {
    auto it = devices_.find(op.device);
    if (it == devices_.end()) continue;
    auto st = streams_.find({op.device, op.stream});
    if (st != streams_.end()) op.stream = st->second;
    op.device = it->second;
  }
  for (auto& c : batch.copies) {
    auto it = devices_.find(c.device);
    if (it != devices_.end()) c.device = it->second;
  }
  std::erase_if(batch.memory, [&](const auto& m) { return adopted(m.device); });
  std::erase_if(batch.devices, [&](const auto& d) { return adopted(d.id); });
}

Adoption& adoption() {
  static auto* a = new Adoption;  // used by CUPTI's threads until exit
  return *a;
}

}  // namespace loupe::prof::cupti
