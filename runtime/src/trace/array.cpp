// Array handles, and the transfers between host and device: uploads
// (from_host) are asynchronous copies on the device's copy stream; reads
// (to_host, item) wait for them and are recorded as synchronous transfers
// with the caller's line.
#include <fmt/format.h>

#include <cstring>
#include <mutex>

#include "exec/callsite_cache.h"
#include "exec/device_impl.h"
#include "exec/nvtx.h"
#include "exec/pinned_memory.h"
#include "ir/shape_inference.h"
#include "loupe/rt/errors.h"
#include "loupe/rt/ops.h"
#include "trace/array_data.h"
#include "trace/dispatch.h"
#include "trace/trace_context.h"

namespace loupe::rt {

using detail::ArrayData;

namespace {
const ArrayData& checked(const std::shared_ptr<ArrayData>& d) {
  if (!d) throw RuntimeError("the Array is null (default-constructed)");
  return *d;
}
}  // namespace

const Shape& Array::shape() const { return checked(data_).shape; }
Dtype Array::dtype() const { return checked(data_).dtype; }
Device Array::device() const { return checked(data_).device; }
bool Array::is_traced() const { return checked(data_).is_tracer() || data_->abstract; }

int64_t Array::dim(int axis) const {
  const Shape& s = shape();
  int64_t a = ir::normalize_axis(axis, s.size(), "dim", {{s, dtype()}}, std::source_location::current());
  return s[size_t(a)];
}

Array Array::astype(Dtype dtype, std::source_location loc) const { return rt::astype(*this, dtype, loc); }

namespace detail {

std::shared_ptr<ArrayData> make_concrete(Shape shape, Dtype dtype, Device device, std::shared_ptr<exec::Buffer> buffer,
                                         exec::Event ready) {
  auto d = std::make_shared<ArrayData>();
  d->shape = std::move(shape);
  d->dtype = dtype;
  d->device = device;
  d->buffer = std::move(buffer);
  d->ready = ready;
  return d;
}

Array splat(const Shape& shape, double value, Dtype dtype, Device device) {
  auto d = std::make_shared<ArrayData>();
  d->shape = shape;
  d->dtype = dtype;
  d->device = device;
  d->splat = true;
  d->value = value;
  return Array(std::move(d));
}

void not_concrete(const ArrayData& d, std::string_view what, const std::source_location& loc) {
  std::string type = type_str(d.dtype, d.shape);
  if (d.abstract)
    throw RuntimeError(
        fmt::format("{} at {}: an abstract array ({}, from rt::spec) has no value; it can only be an "
                    "argument of compile_for",
                    what, ir::format_loc(loc), type));
  if (d.trace && d.trace->active)
    throw RuntimeError(
        fmt::format("{} at {}: a traced value ({}) has no value yet inside jit or grad; return it "
                    "from the function and read it outside",
                    what, ir::format_loc(loc), type));
  throw RuntimeError(
      fmt::format("{} at {}: a traced value ({}) escaped the jit or grad that traced it; return "
                  "values from the function instead of keeping tracers",
                  what, ir::format_loc(loc), type));
}

const std::shared_ptr<exec::Buffer>& buffer_of(const Array& a, std::string_view what, const std::source_location& loc) {
  ArrayData& d = *a.data();
  if (d.buffer) return d.buffer;
  if (!d.splat) not_concrete(d, what, loc);
  static std::mutex mu;
  std::lock_guard lock(mu);
  if (!d.buffer) {
    ir::Attrs attrs;
    attrs.shape = d.shape;
    attrs.dtype = d.dtype;
    attrs.value = d.value;
    Array filled = run_eager(ir::Op::full, {}, attrs, "full", loc, d.device);
    d.ready = filled.data()->ready;
    d.buffer = filled.data()->buffer;
  }
  return d.buffer;
}

}  // namespace detail

Array from_host(const void* data, const Shape& shape, Dtype dtype, Device device, std::source_location loc) {
  for (int64_t e : shape)
    if (e < 0)
      throw ShapeError(fmt::format("from_host at {}: negative extent in {}", ir::format_loc(loc), shape_str(shape)));
  exec::DeviceImpl& dev = exec::device_impl(device);
  exec::Phase phase("upload");
  prof::Ticks start = prof::ticks_now();
  size_t bytes = size_t(numel(shape)) * itemsize(dtype);
  // From pinned memory the copy reads the caller's data when it runs (the
  // caller waits for it before reusing the memory). From pageable memory,
  // stage the data so the caller may reuse its memory at once, as a
  // pageable cudaMemcpyAsync does (a GPU's staging memory is page-locked).
  std::shared_ptr<void> source = exec::pinned_owner(data, bytes);
  const bool pinned = source != nullptr;
  const void* from = data;
  if (!pinned) {
    void* staged = nullptr;
    source = dev.host_staging(bytes, &staged);
    if (bytes > 0) std::memcpy(staged, data, bytes);
    from = staged;
  }
  exec::Stream& copy = dev.copy_stream();
  prof::CallSiteId site = exec::site_of(loc);
  auto buf = exec::allocate(dev, bytes, copy, site, "from_host", &loc);
  uint64_t corr = 0;
  exec::Event ev = dev.copy(copy, prof::CopyKind::host_to_device, buf->data(), from, bytes, std::move(source), &corr);
  if (prof::capturing()) {
    prof::transfer({.start = start,
                    .end = prof::ticks_now(),
                    .device = dev.trace_id(),
                    .direction = prof::CopyKind::host_to_device,
                    .host_memory = pinned ? prof::HostMemory::pinned : prof::HostMemory::pageable,
                    .synchronous = false,
                    .implicit = false,
                    .bytes = bytes,
                    .callsite = site,
                    .correlation = corr});
  }
  return Array(detail::make_concrete(shape, dtype, device, std::move(buf), ev));
}

namespace {

// A synchronous device-to-host copy of the whole array.
std::vector<std::byte> read_back(const Array& a, bool implicit, const char* what, const std::source_location& loc) {
  const ArrayData& d = checked(a.data());
  if (d.is_tracer() || d.abstract) detail::not_concrete(d, what, loc);
  exec::DeviceImpl& dev = exec::device_impl(d.device);
  prof::Ticks start = prof::ticks_now();
  const std::shared_ptr<exec::Buffer>& buf = detail::buffer_of(a, what, loc);
  exec::Stream& copy = dev.copy_stream();
  exec::Event produced = a.data()->ready;
  if (produced.stream != &copy && !produced.done()) copy.wait_event(produced);
  buf->used_on(copy);
  size_t bytes = size_t(a.nbytes());
  std::vector<std::byte> out(bytes);
  uint64_t corr = 0;
  exec::Event ev = dev.copy(copy, prof::CopyKind::device_to_host, out.data(), buf->data(), bytes, nullptr, &corr);
  {
    exec::Phase wait(implicit ? "item" : "to_host", prof::SpanKind::wait);
    ev.wait();
  }
  if (prof::capturing()) {
    prof::transfer({.start = start,
                    .end = prof::ticks_now(),
                    .device = dev.trace_id(),
                    .direction = prof::CopyKind::device_to_host,
                    .host_memory = prof::HostMemory::pageable,
                    .synchronous = true,
                    .implicit = implicit,
                    .bytes = bytes,
                    .callsite = exec::site_of(loc),
                    .correlation = corr});
  }
  return out;
}

}  // namespace

std::vector<std::byte> Array::item_bytes(const std::source_location& loc) const {
  const ArrayData& d = checked(data_);
  if (numel(d.shape) != 1)
    throw ShapeError(fmt::format("item() at {}: needs an array of one element, got {}", ir::format_loc(loc),
                                 type_str(d.dtype, d.shape)));
  return read_back(*this, true, "item()", loc);
}

HostArray Array::to_host(std::source_location loc) const {
  const ArrayData& d = checked(data_);
  return HostArray{d.shape, d.dtype, read_back(*this, false, "to_host()", loc)};
}

const Array& Array::block_until_ready(std::source_location loc) const {
  const ArrayData& d = checked(data_);
  if (d.is_tracer() || d.abstract) detail::not_concrete(d, "block_until_ready()", loc);
  if (!d.ready.done()) {
    exec::Phase wait("block_until_ready", prof::SpanKind::wait);
    d.ready.wait();
  }
  return *this;
}

Array to_device(const Array& x, Device device, std::source_location loc) {
  const ArrayData& d = checked(x.data());
  if (d.device == device) return x;
  if (d.is_tracer() || d.abstract) detail::not_concrete(d, "to_device()", loc);
  if (d.splat) return detail::splat(d.shape, d.value, d.dtype, device);
  exec::DeviceImpl& src = exec::device_impl(d.device);
  exec::DeviceImpl& dst = exec::device_impl(device);
  prof::Ticks start = prof::ticks_now();
  std::shared_ptr<exec::Buffer> from = d.buffer;
  // A GPU's memory is read and written by that GPU's copy engines: a copy
  // from a GPU runs on its copy stream, one to a GPU on the destination's.
  const bool from_gpu = d.device.type == DeviceType::cuda;
  exec::DeviceImpl& mover = from_gpu ? src : dst;
  exec::Stream& copy = mover.copy_stream();
  if (!d.ready.done()) copy.wait_event(d.ready);
  prof::CallSiteId site = exec::site_of(loc);
  size_t bytes = size_t(x.nbytes());
  auto buf = exec::allocate(dst, bytes, dst.copy_stream(), site, "to_device", &loc);
  if (from_gpu) from->used_on(copy);
  prof::CopyKind kind = prof::CopyKind::peer_to_peer;
  if (d.device.type == DeviceType::cuda && device.type == DeviceType::cpu) kind = prof::CopyKind::device_to_host;
  if (d.device.type == DeviceType::cpu && device.type == DeviceType::cuda) kind = prof::CopyKind::host_to_device;
  uint64_t corr = 0;
  // Each buffer belongs to its own device's allocator: hold both until the
  // copy has run rather than tracking them across devices.
  auto both = std::make_shared<std::pair<std::shared_ptr<exec::Buffer>, std::shared_ptr<exec::Buffer>>>(from, buf);
  exec::Event ev = mover.copy(copy, kind, buf->data(), from->data(), bytes, both, &corr);
  if (prof::capturing()) {
    prof::transfer({.start = start,
                    .end = prof::ticks_now(),
                    .device = mover.trace_id(),
                    .direction = kind,
                    .host_memory = prof::HostMemory::unknown,
                    .synchronous = false,
                    .implicit = false,
                    .bytes = bytes,
                    .callsite = site,
                    .correlation = corr});
  }
  return Array(detail::make_concrete(d.shape, d.dtype, device, std::move(buf), ev));
}

Array spec(const Shape& shape, Dtype dtype, Device device) {
  auto d = std::make_shared<ArrayData>();
  d->shape = shape;
  d->dtype = dtype;
  d->device = device;
  d->abstract = true;
  return Array(std::move(d));
}

}  // namespace loupe::rt
