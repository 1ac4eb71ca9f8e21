// Trains a small MLP on synthetic data, the way many training loops are
// written, mistakes included:
//
//  - the dataset does not divide into batches, so the last batch of each
//    epoch is ragged: its new shape recompiles the jitted step (once; the
//    compile cache then serves it);
//  - the loss is read with item() every step for logging: a synchronous
//    device-to-host copy that makes the host wait for the device each step.
//
// Run it under a capture to see both in the trace:
//
//   loupe record -o trace.db -- build/bin/train_mlp
//   LOUPE_TRACE=trace.db build/bin/train_mlp          (the same, without the summary)
//
//   train_mlp [--epochs N] [--samples N] [--batch N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "loupe/prof/record.h"
#include "mlp.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using loupe::samples::TrainState;
using rt::Array;

namespace {

struct Options {
  int epochs = 20;
  int64_t samples = 2000;  // 15 full batches of 128 and a ragged one of 80
  int64_t batch = 128;
  int64_t features = 64, hidden = 256, classes = 10;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    long v = std::strtol(argv[i + 1], nullptr, 10);
    if (v <= 0) {
      std::fprintf(stderr, "train_mlp: %s needs a positive number\n", argv[i]);
      std::exit(2);
    }
    if (flag == "--epochs") o.epochs = int(v);
    else if (flag == "--samples") o.samples = v;
    else if (flag == "--batch") o.batch = v;
    else {
      std::fprintf(stderr, "usage: train_mlp [--epochs N] [--samples N] [--batch N]\n");
      std::exit(2);
    }
  }
  return o;
}

// Host-side data, as a data loader would hold it: features from a normal
// distribution, labels from a fixed random "teacher" network.
struct Dataset {
  std::vector<float> x;
  std::vector<int32_t> y;
};

Dataset make_dataset(const Options& o, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> teacher(size_t(o.features * o.classes));
  std::mt19937 tgen(12345);
  for (float& w : teacher) w = normal(tgen);
  Dataset d;
  d.x.resize(size_t(o.samples * o.features));
  d.y.resize(size_t(o.samples));
  for (float& v : d.x) v = normal(gen);
  for (int64_t i = 0; i < o.samples; ++i) {
    int best = 0;
    float best_score = -1e30f;
    for (int64_t c = 0; c < o.classes; ++c) {
      float s = 0;
      for (int64_t f = 0; f < o.features; ++f)
        s += d.x[size_t(i * o.features + f)] * teacher[size_t(f * o.classes + c)];
      if (s > best_score) {
        best_score = s;
        best = int(c);
      }
    }
    d.y[size_t(i)] = best;
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Dataset train = make_dataset(o, 1);
  Dataset test = make_dataset(o, 2);
  std::printf("train_mlp: %lld samples, batch %lld, MLP %lld-%lld-%lld-%lld, %d epochs on %s\n", (long long)o.samples,
              (long long)o.batch, (long long)o.features, (long long)o.hidden, (long long)o.hidden, (long long)o.classes,
              o.epochs, rt::default_device().str().c_str());

  auto params = loupe::samples::mlp_init({o.features, o.hidden, o.hidden, o.classes}, 7);
  TrainState state{params, rt::adamw_init(params)};
  auto step = rt::jit("train_step",
                      [](TrainState s, Array x, Array y) { return loupe::samples::train_step(s, x, y, {.lr = 2e-3}); },
                      {.arg_names = {"state", "x", "y"}});
  auto accuracy = rt::jit("accuracy", [](std::vector<Array> p, Array x, Array y) {
    Array pred = rt::argmax(loupe::samples::mlp_forward(p, x), 1);
    return rt::mean(rt::astype(rt::equal(pred, y), rt::f32));
  });

  Array test_x = rt::from_host(test.x.data(), {o.samples, o.features}, rt::f32);
  Array test_y = rt::from_host(test.y.data(), {o.samples}, rt::i32);
  int64_t global_step = 0;
  float loss_value = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    double epoch_loss = 0;
    int batches = 0;
    for (int64_t start = 0; start < o.samples; start += o.batch) {
      prof::StepScope step_scope(global_step++);
      int64_t rows = std::min(o.batch, o.samples - start);  // mistake 1: the last batch is ragged
      Array x, y;
      {
        prof::Scope load("load batch");
        x = rt::from_host(train.x.data() + start * o.features, {rows, o.features}, rt::f32);
        y = rt::from_host(train.y.data() + start, {rows}, rt::i32);
      }
      auto [next, loss] = step(state, x, y);
      state = next;
      loss_value = loss.item<float>();  // mistake 2: a synchronous read every step
      epoch_loss += loss_value;
      ++batches;
    }
    if (epoch % 5 == 4 || epoch == o.epochs - 1) {
      float acc = accuracy(state.params, test_x, test_y).item<float>();
      std::printf("epoch %3d  loss %.4f  test accuracy %.3f\n", epoch + 1, epoch_loss / batches, acc);
    }
  }
  rt::JitStats s = step.stats();
  std::printf("train_step: %llu compiles, %llu cache hits; last recompile: %s\n", (unsigned long long)s.misses,
              (unsigned long long)s.hits, s.last_reason.c_str());
  rt::MemoryStats m = rt::memory_stats(rt::default_device());
  std::printf("device memory: peak %.1f MiB allocated, %.1f MiB reserved\n", double(m.peak_allocated) / (1 << 20),
              double(m.reserved) / (1 << 20));
  return loss_value < 2.3f ? 0 : 1;
}
