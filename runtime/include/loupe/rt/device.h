// Devices: where arrays live and kernels run.
//
// A device has its own memory, separate from the host's (the CPU device
// keeps an arena of its own under a caching allocator) and in-order
// streams that run its work asynchronously: the host returns as soon as
// work is queued. Copies between host and device are explicit and
// recorded.
#pragma once

#include <cstdint>
#include <string>

namespace loupe::rt {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
  // "cpu:0", "cuda:1".
  std::string str() const;
};

// A CUDA device when the CUDA backend is built and a GPU is present, else
// the CPU device cpu:0. The environment variable LOUPE_DEVICE (cpu, cpu:N,
// cuda, cuda:N) overrides the choice.
Device default_device();
// The CPU device `index` (created on first use; up to 8).
Device cpu(int index = 0);
// The CUDA device `index` (created on first use). Throws RuntimeError
// saying why when it is not available (a build without the CUDA toolkit,
// no driver, no such GPU).
Device cuda(int index = 0);
// The number of CUDA devices this process can use; 0, with the reason in
// `why_not`, when there are none.
int cuda_device_count(std::string* why_not = nullptr);
// What runs the CPU device's matrix products: its BLAS and the kernel set
// it loaded, and how that set was chosen, e.g. "OpenBLAS 0.3.21, SkylakeX
// kernels (from the CPU's features)". The trace's device row says the
// same (`detail`). Throws RuntimeError when OpenBLAS cannot be loaded.
std::string cpu_blas();

// The allocator's view of a device's memory. Byte counts are of blocks as
// handed out (rounded up to the allocator's granularity).
struct MemoryStats {
  int64_t allocated = 0;       // in blocks held by live arrays (or freed, waiting for another stream)
  int64_t reserved = 0;        // taken from the device by the allocator now
  int64_t peak_allocated = 0;  // highest `allocated` since start or reset
  int64_t peak_reserved = 0;
  int64_t capacity = 0;            // the most the allocator may reserve
  int64_t largest_free_block = 0;  // largest cached block, for fragmentation
  uint64_t allocs = 0, frees = 0, reserves = 0, releases = 0, retries = 0, ooms = 0;
};

MemoryStats memory_stats(Device device);
void reset_peak_memory(Device device);
// The CPU device's capacity is 2 GiB unless set here (or by the
// LOUPE_CPU_MEMORY environment variable, in bytes with an optional K/M/G
// suffix). Lowering it below what is reserved releases the cache first.
void set_memory_capacity(Device device, int64_t bytes);
// Gives cached, unused memory back to the device.
void empty_cache(Device device);
// Blocks the host until all work queued on the device has run.
void synchronize(Device device);

}  // namespace loupe::rt
