// Array: an immutable n-dimensional value on a device.
//
// An Array is a cheap handle (a shared pointer); copies share the value.
// Outside jit, an op on arrays queues one kernel on the device's compute
// stream and returns at once with an Array whose value is pending; reading
// it on the host (item(), to_host()) waits. Inside jit or grad, arrays are
// tracers: abstract values (shape, dtype, device) that record the ops
// applied to them into a graph; reading one on the host is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <source_location>
#include <type_traits>
#include <vector>

#include "loupe/rt/device.h"
#include "loupe/rt/dtype.h"
#include "loupe/rt/shape.h"

namespace loupe::rt {

namespace detail {
struct ArrayData;
}

// A copy of an array's value in host memory, as to_host() returns it.
struct HostArray {
  Shape shape;
  Dtype dtype = Dtype::f32;
  std::vector<std::byte> bytes;

  int64_t size() const { return numel(shape); }
  // Element i converted to T (f16 and bf16 widen to float).
  template <typename T>
  T at(int64_t i) const;
  template <typename T>
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<size_t>(size()));
    for (int64_t i = 0; i < size(); ++i) out[size_t(i)] = at<T>(i);
    return out;
  }
};

class Array {
 public:
  // A null handle; most operations on it raise RuntimeError.
  Array() = default;
  explicit Array(std::shared_ptr<detail::ArrayData> data) : data_(std::move(data)) {}

  bool valid() const { return data_ != nullptr; }
  const Shape& shape() const;
  Dtype dtype() const;
  Device device() const;
  int ndim() const { return int(shape().size()); }
  int64_t size() const { return numel(shape()); }
  // Extent of `axis`; negative axes count from the end.
  int64_t dim(int axis) const;
  int64_t nbytes() const { return size() * int64_t(itemsize(dtype())); }
  // True for a tracer (inside jit or grad) and for an abstract spec.
  bool is_traced() const;

  // ---- Reading values on the host: synchronous, recorded as transfers
  // with the caller's line. item() is an implicit transfer (a value read in
  // passing, as in logging a loss), to_host() an explicit one.
  template <typename T>
  T item(std::source_location loc = std::source_location::current()) const {
    return HostArray{{}, dtype(), item_bytes(loc)}.template at<T>(0);
  }
  HostArray to_host(std::source_location loc = std::source_location::current()) const;
  template <typename T>
  std::vector<T> to_vector(std::source_location loc = std::source_location::current()) const {
    return to_host(loc).template to_vector<T>();
  }
  // Blocks until the value has been computed (a recorded wait).
  const Array& block_until_ready(std::source_location loc = std::source_location::current()) const;

  Array astype(Dtype dtype, std::source_location loc = std::source_location::current()) const;

  // The shared value, for the runtime's own use.
  const std::shared_ptr<detail::ArrayData>& data() const { return data_; }
  // Identity: same value object (not equal contents).
  bool same(const Array& other) const { return data_ == other.data_; }

 private:
  std::vector<std::byte> item_bytes(const std::source_location& loc) const;
  std::shared_ptr<detail::ArrayData> data_;
};

// Page-locked ("pinned") host memory, for uploads that overlap compute.
//
// from_host() normally copies its data to a staging buffer before it
// returns (host time on the critical path; recorded as an upload from
// pageable memory), as a GPU driver does for ordinary memory. Data inside a
// PinnedBuffer is copied straight from there by the device's copy stream,
// after from_host() has returned: the host must not overwrite it until the
// upload has completed (block_until_ready() on the uploaded array), which is
// why input pipelines keep two or more such buffers and fill one while the
// other uploads. The memory lives until the buffer and every upload from it
// are gone.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes);
  void* data() const { return memory_.get(); }
  size_t size() const { return size_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data());
  }

 private:
  std::shared_ptr<void> memory_;
  size_t size_ = 0;
};

// Copies host data to a device, asynchronously. From ordinary memory the
// data is staged before the call returns, so it may be reused at once; from
// a PinnedBuffer it is read later, by the copy (see above).
Array from_host(const void* data, const Shape& shape, Dtype dtype, Device device = default_device(),
                std::source_location loc = std::source_location::current());

template <typename T>
Array array(const std::vector<T>& values, const Shape& shape, Device device = default_device(),
            std::source_location loc = std::source_location::current()) {
  static_assert(!std::is_same_v<T, bool>, "use a std::vector<uint8_t> with Dtype::boolean for bool arrays");
  return from_host(values.data(), shape, dtype_of<T>(), device, loc);
}

// The same value on another device (a copy; the same array if already there).
Array to_device(const Array& x, Device device, std::source_location loc = std::source_location::current());

// An abstract array: a shape, dtype and device with no value, to compile a
// jitted function ahead of time (compile_for) without real inputs.
Array spec(const Shape& shape, Dtype dtype = Dtype::f32, Device device = default_device());

// ---- HostArray element access ---------------------------------------------
namespace detail {
float half_to_float(uint16_t h);
float bfloat_to_float(uint16_t b);

// The element of type V stored at `p` (host bytes need not be aligned for V).
template <typename V>
V load_element(const std::byte* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
}  // namespace detail

template <typename T>
T HostArray::at(int64_t i) const {
  const std::byte* p = bytes.data() + size_t(i) * itemsize(dtype);
  switch (dtype) {
    case Dtype::f32: return T(detail::load_element<float>(p));
    case Dtype::f16: return T(detail::half_to_float(detail::load_element<uint16_t>(p)));
    case Dtype::bf16: return T(detail::bfloat_to_float(detail::load_element<uint16_t>(p)));
    case Dtype::i32: return T(detail::load_element<int32_t>(p));
    case Dtype::i64: return T(detail::load_element<int64_t>(p));
    case Dtype::boolean: return T(uint8_t(*p) != 0);
  }
  return T();
}

}  // namespace loupe::rt
