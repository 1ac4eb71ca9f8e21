// A device running out of memory in the middle of a jitted training step,
// while a capture records: the exception says how much was asked for, in
// use and available; the trace holds the OOM; the next step, with a smaller
// batch, runs.
#include <gtest/gtest.h>

#include "loupe/prof/capture.h"
#include "loupe/prof/trace_reader.h"
#include "mlp.h"
#include "profiler/test_files.h"
#include "runtime_test_util.h"

namespace loupe::test {
namespace {

TEST(Fault, OutOfMemoryInAJittedTrainingStep) {
  TempDir dir;
  rt::Device dev = rt::cpu(6);
  const int64_t capacity = int64_t(64) << 20;
  rt::set_memory_capacity(dev, capacity);
  rt::OutOfMemory failure("", dev, 0, 0, 0);
  bool failed = false;
  float loss_after = 0;
  {
    prof::Capture capture({.path = dir.file("oom.db")});
    samples::TrainState s{samples::mlp_init({256, 512, 512, 10}, 1, dev), {}};
    s.opt = rt::adamw_init(s.params);
    auto step = rt::jit("train_step", [](const samples::TrainState& st, const Array& x, const Array& y) {
      return samples::train_step(st, x, y);
    });
    auto batch = [&](int64_t n) {
      Array x = rt::random::normal(rt::random::key(7, dev), {n, 256});
      Array y = rt::random::randint(rt::random::key(8, dev), {n}, 0, 10);
      return std::pair{x, y};
    };
    auto [x_small, y_small] = batch(64);
    std::tie(s, std::ignore) = step(s, x_small, y_small);
    // A batch whose activations (8192 x 512 floats, 16 MiB each) cannot fit.
    auto [x_big, y_big] = batch(8192);
    try {
      auto result = step(s, x_big, y_big);
      result.second.block_until_ready();
    } catch (const rt::OutOfMemory& e) {
      failed = true;
      failure = e;
    }
    // The runtime is usable: the next, smaller, step runs.
    auto [next, loss] = step(s, x_small, y_small);
    loss_after = loss.item<float>();
    capture.stop();
  }
  ASSERT_TRUE(failed) << "the big batch did not run out of memory";
  EXPECT_EQ(failure.capacity, capacity);
  EXPECT_GT(failure.requested, 0);
  EXPECT_GT(failure.requested + failure.in_use, capacity) << "it did not fit";
  EXPECT_LE(failure.in_use, capacity);
  EXPECT_TRUE(std::isfinite(loss_after));

  prof::TraceModel m = prof::load_trace(dir.file("oom.db"));
  uint64_t ooms = 0, retries = 0;
  for (const prof::MemoryEvents& me : m.memory) {
    for (size_t i = 0; i < me.size(); ++i) {
      if (me.kind[i] == prof::MemoryEventKind::oom) {
        ++ooms;
        EXPECT_EQ(me.bytes[i], failure.requested);
      }
      retries += me.kind[i] == prof::MemoryEventKind::retry;
    }
  }
  EXPECT_EQ(ooms, 1u);
  EXPECT_GE(retries, 1u) << "the cache was flushed before giving up";
}

}  // namespace
}  // namespace loupe::test
