// The executor: the host returns as soon as work is queued, kernels wait
// for uploads on the copy stream, and memory released while queued work
// still reads it is reused only once that work is done.
#include <gtest/gtest.h>

#include "runtime_test_util.h"
#include "trace/array_data.h"

namespace loupe::test {
namespace {

TEST(Executor, TheHostReturnsBeforeTheDeviceFinishes) {
  Array a = rt::ones({1024, 1024});
  Array b = rt::ones({1024, 1024});
  a.block_until_ready();
  b.block_until_ready();
  // About 16 GFLOP: well over 100 ms on one core, while queueing it takes
  // microseconds (long enough that a busy machine descheduling this thread
  // does not make the check below pass by accident).
  Array c = a;
  for (int i = 0; i < 8; ++i) c = rt::matmul(c, b) * (1.0 / 1024);
  EXPECT_FALSE(c.data()->ready.done());
  c.block_until_ready();
  EXPECT_TRUE(c.data()->ready.done());
  EXPECT_EQ(c.to_vector<float>()[0], 1.0f);
}

TEST(Executor, KernelsWaitForUploadsAndReleasedBuffersAreReusedSafely) {
  // Each round uploads on the copy stream, computes on the compute stream,
  // and drops the upload at once; new uploads then reuse that memory. A
  // reuse that did not wait for the kernel would corrupt its result.
  std::vector<Array> results;
  std::vector<float> expect;
  for (int round = 0; round < 200; ++round) {
    std::vector<float> host(4096, float(round));
    Array x = rt::from_host(host.data(), {4096}, rt::f32);
    Array y = rt::sum(x * 2.0 + 1.0);
    x = Array();  // released while the kernel may still read it
    results.push_back(y);
    expect.push_back(4096.0f * (2.0f * float(round) + 1.0f));
  }
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].item<float>(), expect[i]) << "round " << i;
}

TEST(Executor, JittedTemporariesAreReleasedInStreamOrder) {
  // The temporaries of one call are released while later calls are queued;
  // results stay exact.
  auto f = rt::jit("chain", [](Array x) {
    Array h = rt::matmul(x, x);
    return rt::matmul(h, x) + rt::matmul(x, h);
  });
  Array x = rt::full({64, 64}, 0.5);
  std::vector<Array> outs;
  for (int i = 0; i < 50; ++i) outs.push_back(f(x));
  for (const Array& o : outs) EXPECT_EQ(o.to_vector<float>()[7], 2 * 64 * 64 * 0.125f);
  rt::synchronize(rt::default_device());
  int64_t live = rt::memory_stats(rt::default_device()).allocated;
  outs.clear();
  rt::synchronize(rt::default_device());
  EXPECT_LT(rt::memory_stats(rt::default_device()).allocated, live);
}

}  // namespace
}  // namespace loupe::test
