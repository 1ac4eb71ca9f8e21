// The exceptions the runtime raises. Every message names what was wrong
// (the op, the operands' types) and where (the user's source line).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "loupe/rt/device.h"

namespace loupe::rt {

// Bad shapes, dtypes or arguments, raised when an op is traced or
// dispatched, before anything runs.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A device allocation did not fit, even after the allocator gave back its
// cache. The runtime stays usable: free arrays and try again.
class OutOfMemory : public std::runtime_error {
 public:
  OutOfMemory(const std::string& message, Device on, int64_t requested_bytes, int64_t in_use_bytes,
              int64_t capacity_bytes)
      : std::runtime_error(message),
        device(on),
        requested(requested_bytes),
        in_use(in_use_bytes),
        capacity(capacity_bytes) {}
  Device device;
  int64_t requested;  // bytes asked for (rounded to the allocator's granularity)
  int64_t in_use;     // bytes allocated when it failed
  int64_t capacity;   // the device's capacity
};

// A misuse of the runtime itself: reading a traced value on the host, a
// traced value used after its trace ended, mixing devices.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace loupe::rt
