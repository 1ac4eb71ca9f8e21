// The CUPTI collector of a build without the CUDA toolkit: it never starts,
// and says why.
#include "loupe/prof/cupti.h"

namespace loupe::prof {

struct CuptiCollector::Impl {};

CuptiCollector::CuptiCollector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CuptiCollector::~CuptiCollector() = default;

std::unique_ptr<CuptiCollector> CuptiCollector::start(const CuptiOptions&, std::string* why_not) {
  if (why_not) *why_not = "loupe was built without the CUDA toolkit: no CUPTI";
  return nullptr;
}

void CuptiCollector::flush() {}
void CuptiCollector::push_correlation(uint64_t) {}
void CuptiCollector::pop_correlation() {}
void CuptiCollector::adopt_device(uint32_t, uint32_t) {}
void CuptiCollector::adopt_stream(uint32_t, void*, uint32_t) {}
void CuptiCollector::leave_memory_to_framework(uint32_t, bool) {}
CuptiStats CuptiCollector::stats() { return {}; }

}  // namespace loupe::prof
