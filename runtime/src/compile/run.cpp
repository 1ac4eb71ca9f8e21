// Running an executable: bind inputs, make the compute stream wait for
// inputs still being produced on other streams (uploads), then queue every
// kernel, allocating each temporary just before its first writer and
// releasing it right after its last reader is queued. Releases are
// stream-ordered, so later kernels on the same stream reuse the memory
// safely while the host is already ahead.
#include <fmt/format.h>

#include "compile/executable.h"
#include "exec/buffer.h"
#include "exec/callsite_cache.h"
#include "exec/device_impl.h"
#include "loupe/rt/errors.h"
#include "trace/array_data.h"

namespace loupe::rt::compile {

std::vector<Array> run(const Executable& exe, const std::vector<Array>& inputs, Device device,
                       const std::source_location* eager_loc) {
  exec::DeviceImpl& dev = exec::device_impl(device);
  exec::Stream& stream = dev.compute_stream();
  const size_t n = exe.slots.size();
  std::vector<std::shared_ptr<exec::Buffer>> bufs(n);
  std::vector<exec::Event> ready(n);

  auto bind = [&](size_t s, const Array& a) {
    const std::source_location here = eager_loc ? *eager_loc : std::source_location::current();
    const std::shared_ptr<exec::Buffer>& b = detail::buffer_of(a, "used as a kernel input", here);
    const detail::ArrayData& d = *a.data();
    if (d.device != device)
      throw RuntimeError(fmt::format("an input on {} was passed to work on {}; move it with to_device()",
                                     d.device.str(), device.str()));
    bufs[s] = b;
    ready[s] = d.ready;
    if (d.ready.stream != &stream && !d.ready.done()) stream.wait_event(d.ready);
    b->used_on(stream);
  };
  for (size_t s = 0; s < n; ++s) {
    const Executable::Slot& slot = exe.slots[s];
    if (slot.kind == Executable::Slot::Kind::input) bind(s, inputs.at(size_t(slot.input)));
    else if (slot.kind == Executable::Slot::Kind::constant) bind(s, slot.constant);
  }

  prof::CallSiteId eager_site = eager_loc ? exec::site_of(*eager_loc) : prof::kNoCallSite;
  std::vector<void*> ptrs;
  for (const Executable::Step& step : exe.steps) {
    const size_t first_out = step.slots.size() - size_t(step.outputs);
    for (size_t j = first_out; j < step.slots.size(); ++j) {
      const Executable::Slot& slot = exe.slots[size_t(step.slots[j])];
      bufs[size_t(step.slots[j])] = exec::allocate(dev, size_t(slot.bytes), stream, eager_loc ? eager_site : slot.site,
                                                   slot.op, eager_loc ? eager_loc : &slot.loc);
    }
    ptrs.clear();
    for (int s : step.slots) ptrs.push_back(bufs[size_t(s)]->data());
    exec::Event done = dev.launch(stream, step.spec, ptrs);
    for (size_t j = first_out; j < step.slots.size(); ++j) ready[size_t(step.slots[j])] = done;
    for (int s : step.release) bufs[size_t(s)].reset();
  }

  std::vector<Array> outputs;
  outputs.reserve(exe.outputs.size());
  for (const Executable::Output& o : exe.outputs) {
    size_t s = size_t(o.slot);
    outputs.emplace_back(detail::make_concrete(o.shape, o.dtype, device, bufs[s], ready[s]));
  }
  return outputs;
}

}  // namespace loupe::rt::compile
