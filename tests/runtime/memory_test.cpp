// Device memory through the runtime: out-of-memory raises with the figures
// a user needs and leaves the runtime usable; naive attention's S×S scores
// do not fit where the fused kernel's linear memory does.
#include <gtest/gtest.h>

#include "runtime_test_util.h"

namespace loupe::test {
namespace {

TEST(Memory, OutOfMemoryRaisesAndTheRuntimeStaysUsable) {
  rt::Device dev = rt::cpu(2);
  rt::set_memory_capacity(dev, int64_t(64) << 20);
  Array a = rt::ones({1024, 1024}, rt::f32, dev);  // 4 MiB
  Array keep = a * 2.0;
  int line = __LINE__ + 2;
  try {
    Array huge = rt::zeros({128, 1024, 1024}, rt::f32, dev);  // 512 MiB
    FAIL() << "no OOM";
  } catch (const rt::OutOfMemory& e) {
    EXPECT_EQ(e.device, dev);
    EXPECT_EQ(e.requested, int64_t(512) << 20);
    EXPECT_EQ(e.capacity, int64_t(64) << 20);
    EXPECT_EQ(e.in_use, rt::memory_stats(dev).allocated);
    EXPECT_GE(e.in_use, int64_t(8) << 20);
    std::string msg = e.what();
    EXPECT_NE(msg.find("cpu:2 out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("for full at memory_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
  }
  rt::MemoryStats s = rt::memory_stats(dev);
  EXPECT_EQ(s.ooms, 1u);
  EXPECT_EQ(s.retries, 1u);
  // Still usable: earlier arrays are intact and new work runs.
  EXPECT_EQ(rt::sum(keep).item<float>(), 2.0f * 1024 * 1024);
  Array b = rt::matmul(a, a);
  EXPECT_EQ(b.to_vector<float>()[5], 1024.0f);
  // Freeing makes room.
  a = Array();
  keep = Array();
  b = Array();
  rt::synchronize(dev);
  Array fits = rt::zeros({8, 1024, 1024}, rt::f32, dev);  // 32 MiB
  EXPECT_EQ(fits.shape()[0], 8);
}

// An upload from pinned memory reads it after from_host() returns: the
// buffer's memory lives until the copy has run, even if the buffer does
// not, and a range inside it counts as pinned too.
TEST(Memory, PinnedUploadsKeepTheirSourceAlive) {
  Array x, tail;
  {
    rt::PinnedBuffer buffer(4096 * sizeof(float));
    float* f = buffer.as<float>();
    for (int i = 0; i < 4096; ++i) f[i] = float(i);
    x = rt::from_host(f, {4096}, rt::f32);
    tail = rt::from_host(f + 4000, {96}, rt::f32);
  }
  std::vector<float> v = x.to_vector<float>();
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[4095], 4095.0f);
  EXPECT_EQ(tail.to_vector<float>()[95], 4095.0f);
}

TEST(Memory, OutOfMemoryInsideAJittedFunction) {
  rt::Device dev = rt::cpu(3);
  rt::set_memory_capacity(dev, int64_t(16) << 20);
  auto f = rt::jit("grow", [](Array x) { return rt::matmul(rt::transpose(x), x); });
  Array small = rt::ones({64, 256}, rt::f32, dev);
  EXPECT_EQ(f(small).shape(), (Shape{256, 256}));
  Array wide = rt::ones({2, 4096}, rt::f32, dev);  // the result is 4096² floats = 64 MiB
  EXPECT_THROW(f(wide), rt::OutOfMemory);
  EXPECT_EQ(f(small).to_vector<float>()[0], 64.0f);  // usable afterwards
}

TEST(Memory, FusedAttentionFitsWhereNaiveDoesNot) {
  rt::Device dev = rt::cpu(4);
  rt::set_memory_capacity(dev, int64_t(48) << 20);
  const int64_t s = 4096, d = 32;
  Array q = rt::random::normal(rt::random::key(1, dev), {1, s, d});
  Array k = rt::random::normal(rt::random::key(2, dev), {1, s, d});
  Array v = rt::random::normal(rt::random::key(3, dev), {1, s, d});
  rt::reset_peak_memory(dev);
  Array out = rt::attention(q, k, v, true, rt::AttentionImpl::fused);
  out.block_until_ready();
  EXPECT_LT(rt::memory_stats(dev).peak_allocated, int64_t(4) << 20);
  EXPECT_THROW(rt::attention(q, k, v, true, rt::AttentionImpl::naive), rt::OutOfMemory);  // 64 MiB of scores
  EXPECT_EQ(out.shape(), (Shape{1, s, d}));
}

TEST(Memory, StatsFollowArrays) {
  rt::Device dev = rt::cpu(5);
  int64_t before = rt::memory_stats(dev).allocated;
  Array a = rt::zeros({1000}, rt::f32, dev);
  a.block_until_ready();
  EXPECT_EQ(rt::memory_stats(dev).allocated - before, 4096);  // rounded to 512-byte granules
  a = Array();
  rt::synchronize(dev);
  EXPECT_EQ(rt::memory_stats(dev).allocated, before);
  EXPECT_GT(rt::memory_stats(dev).reserved, 0);  // cached
  rt::empty_cache(dev);
  EXPECT_EQ(rt::memory_stats(dev).reserved, 0);
}

TEST(Memory, ArraysMoveBetweenDevices) {
  Array a = rt::arange(0, 6, 1, rt::f32);
  Array b = rt::to_device(a, rt::cpu(6));
  EXPECT_EQ(b.device(), rt::cpu(6));
  EXPECT_EQ((b * 2.0).to_vector<float>(), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_THROW(a + b, rt::RuntimeError);  // different devices
}

}  // namespace
}  // namespace loupe::test
