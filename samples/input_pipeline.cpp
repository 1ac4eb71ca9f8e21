// Input pipeline: the device waits while the host prepares each batch.
//
// Each training batch is read from storage (a few milliseconds of waiting,
// as on a network file system: simulated here with a sleep) and decoded
// (bytes to normalised floats, a random flip: host computation). Reading
// and decoding take longer than the device needs for the step.
//
//   mistake: the training loop prepares each batch itself, then uploads it
//            from ordinary (pageable) memory, which the runtime must first
//            copy to a staging buffer. The device runs each step quickly
//            and then sits idle until the host is done with the next batch.
//            `loupe analyze` reports an `idle-gap` finding caused by host
//            work in the `load batch` range, and a `transfer` finding for
//            the pageable upload every step.
//   fixed:   loader threads prepare the next batches while the device works
//            on this one, each into a pinned (page-locked) buffer; uploads
//            from pinned memory are queued at once and run on the device's
//            copy stream, overlapping the previous step's compute. A buffer
//            is reused only after its upload has completed (double
//            buffering, with as many buffers as batches in flight).
//
//   input_pipeline --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db] [--workers N] [--hidden N]
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "loupe/prof/record.h"
#include "mlp.h"
#include "sample.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using loupe::samples::TrainState;
using rt::Array;

namespace {

constexpr int64_t kBatch = 64, kPixels = 3 * 32 * 32, kClasses = 10;
constexpr auto kReadLatency = std::chrono::milliseconds(8);

// Reads batch `n` and decodes it into `pixels` and `labels` (caller's memory).
void load_batch(int64_t n, float* pixels, int32_t* labels) {
  prof::Scope range("load batch");
  // Reading: mostly waiting on storage. The bytes are made up here (a hash
  // of their position); the label brightens the image, so there is
  // something to learn.
  std::this_thread::sleep_for(kReadLatency);
  std::vector<uint8_t> bytes(size_t(kBatch * kPixels));
  for (int64_t r = 0; r < kBatch; ++r) {
    labels[r] = int32_t((n * 7 + r * 3) % kClasses);
    uint32_t h = uint32_t(n * kBatch + r) * 2654435761u;
    for (int64_t p = 0; p < kPixels; ++p) {
      h ^= h << 13, h ^= h >> 17, h ^= h << 5;
      bytes[size_t(r * kPixels + p)] = uint8_t((h & 127) + labels[r] * 12);
    }
  }
  // Decoding: to floats around zero, every other image flipped.
  for (int64_t r = 0; r < kBatch; ++r) {
    bool flip = (n + r) % 2 == 1;
    for (int64_t p = 0; p < kPixels; ++p) {
      int64_t from = r * kPixels + (flip ? kPixels - 1 - p : p);
      pixels[r * kPixels + p] = (float(bytes[size_t(from)]) - 128.0f) / 128.0f;
    }
  }
}

// The fix: `workers` threads fill pinned buffers with the batches ahead of
// the one the training loop takes, at most `depth` batches ahead.
class Loader {
 public:
  struct Slot {
    rt::PinnedBuffer pixels{size_t(kBatch * kPixels) * sizeof(float)};
    rt::PinnedBuffer labels{size_t(kBatch) * sizeof(int32_t)};
    int64_t batch = -1;  // the batch it holds, once loaded
  };

  Loader(int workers, int depth) : slots_(size_t(depth)) {
    for (int w = 0; w < workers; ++w) {
      threads_.emplace_back([this, w] {
        prof::set_thread_name("loader " + std::to_string(w));
        work();
      });
    }
  }
  ~Loader() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Batch n, waiting for it if the loaders are behind.
  Slot& take(int64_t n) {
    Slot& s = slots_[size_t(n) % slots_.size()];
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return s.batch == n; });
    return s;
  }
  // Gives batch n's buffer back for batch n + depth, once nothing reads it.
  void release(int64_t n) {
    {
      std::lock_guard lock(mu_);
      released_ = n + 1;
    }
    cv_.notify_all();
  }

 private:
  void work() {
    for (;;) {
      int64_t n;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || next_ < released_ + int64_t(slots_.size()); });
        if (stop_) return;
        n = next_++;
      }
      Slot& s = slots_[size_t(n) % slots_.size()];
      load_batch(n, s.pixels.as<float>(), s.labels.as<int32_t>());
      {
        std::lock_guard lock(mu_);
        s.batch = n;
      }
      cv_.notify_all();
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_ = 0, released_ = 0;
  bool stop_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  loupe::samples::SampleArgs args(argc, argv, "input_pipeline", {{"--workers", "8"}, {"--hidden", "64"}});
  loupe::samples::Recording recording(args, "input_pipeline");
  const int steps = args.steps(args.ci() ? 30 : 200);
  const int64_t hidden = args.number("--hidden");

  auto params = loupe::samples::mlp_init({kPixels, hidden, kClasses}, 7);
  TrainState state{params, rt::adamw_init(params)};
  auto step = rt::jit("train_step", [](TrainState s, Array x, Array y) { return loupe::samples::train_step(s, x, y); },
                      {.arg_names = {"state", "x", "y"}});
  step.compile_for(state, rt::spec({kBatch, kPixels}), rt::spec({kBatch}, rt::i32));

  std::printf("input_pipeline (%s): %d steps of %lld images, MLP %lld-%lld-%lld\n", args.variant().c_str(), steps,
              (long long)kBatch, (long long)kPixels, (long long)hidden, (long long)kClasses);
  loupe::samples::LoopClock clock;
  Array loss;
  if (!args.fixed()) {
    std::vector<float> pixels(size_t(kBatch * kPixels));
    std::vector<int32_t> labels(static_cast<size_t>(kBatch));
    for (int i = 0; i < steps; ++i) {
      prof::StepScope step_scope(i);
      load_batch(i, pixels.data(), labels.data());  // MISTAKE: the device idles while the host loads
      Array x = rt::from_host(pixels.data(), {kBatch, kPixels}, rt::f32);  // MISTAKE: pageable upload
      Array y = rt::from_host(labels.data(), {kBatch}, rt::i32);
      std::tie(state, loss) = step(state, x, y);
    }
  } else {
    const int workers = int(args.number("--workers"));
    Loader loader(workers, workers + 2);  // FIX: batches prepared ahead, on other threads
    Array previous_x, previous_y;
    for (int i = 0; i < steps; ++i) {
      prof::StepScope step_scope(i);
      Loader::Slot& batch = loader.take(i);
      Array x = rt::from_host(batch.pixels.data(), {kBatch, kPixels}, rt::f32);  // FIX: pinned, asynchronous
      Array y = rt::from_host(batch.labels.data(), {kBatch}, rt::i32);
      std::tie(state, loss) = step(state, x, y);
      // The previous batch's buffer may be refilled once its upload is done.
      if (i > 0) {
        previous_x.block_until_ready();
        previous_y.block_until_ready();
        loader.release(i - 1);
      }
      previous_x = x;
      previous_y = y;
    }
  }
  clock.report(steps);
  std::printf("final loss %.4f\n", loss.item<float>());
  return 0;
}
