// Ragged batches: input shapes that change from batch to batch recompile
// the jitted step.
//
// A text classifier trains on sequences of varying length. Its data loader
// groups sequences of similar length into batches (as length-grouped
// samplers do, to waste little on padding) and pads each batch only to its
// own longest sequence; the dataset does not divide into batches, so the
// last batch of each epoch is also short.
//
//   mistake: every batch has its own [rows, length] shape, and jit compiles
//            the step once per shape it has not seen. The sampler forms
//            new batches each epoch, so new lengths keep coming long after
//            the first epoch.
//            `loupe analyze` reports a `recompile` finding (shape change)
//            at the line that calls the step.
//   fixed:   lengths are padded up to one of a few buckets (16, 32, 64, 128)
//            and short batches to the full batch size; a mask removes the
//            padding from the result. Each bucket is compiled once, ahead of
//            time, before the loop: no step compiles.
//
//   ragged_batches --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db] [--batch N]
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "loupe/prof/record.h"
#include "mlp.h"
#include "sample.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using loupe::samples::TrainState;
using rt::Array;

namespace {

constexpr int64_t kVocab = 512, kEmbed = 32, kHidden = 64, kClasses = 4;
constexpr int64_t kMinLength = 8, kMaxLength = 128;

// A batch as the data loader hands it over, in host memory. `mask` is 1 for
// a real token and 0 for padding; `weights` is 1 for a real row.
struct HostBatch {
  int64_t rows = 0, length = 0;
  std::vector<int32_t> tokens, labels;
  std::vector<float> mask, weights;
};

// Sequences about one of kClasses topics: most tokens come from the topic's
// quarter of the vocabulary, so the mean of their embeddings tells it.
struct Dataset {
  std::vector<std::vector<int32_t>> sequences;
  std::vector<int32_t> labels;
};

Dataset make_dataset(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> length(kMinLength, kMaxLength);
  std::uniform_int_distribution<int32_t> topic(0, kClasses - 1), word(0, kVocab / kClasses - 1), any(0, kVocab - 1);
  std::bernoulli_distribution on_topic(0.7);
  Dataset d;
  for (int64_t i = 0; i < count; ++i) {
    int32_t t = topic(gen);
    std::vector<int32_t> s(size_t(length(gen)));
    for (int32_t& w : s) w = on_topic(gen) ? t * int32_t(kVocab / kClasses) + word(gen) : any(gen);
    d.sequences.push_back(std::move(s));
    d.labels.push_back(t);
  }
  return d;
}

// The batches of one epoch, as a length-grouped sampler forms them: the
// dataset is shuffled anew each epoch and cut into megabatches of
// kMegabatch batches; each megabatch is sorted by length and cut into
// batches of `batch` rows. Sequences of similar length share a batch, so
// padding to the batch's longest wastes little, but each epoch's batches
// are new, and so are their longest lengths. The dataset does not divide
// into batches: the last one is short.
constexpr int64_t kMegabatch = 4;
std::vector<std::vector<int64_t>> group_by_length(const Dataset& d, int64_t batch, uint32_t epoch) {
  std::vector<int64_t> order(d.sequences.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(epoch));
  const auto by_length = [&](int64_t a, int64_t b) {
    return d.sequences[size_t(a)].size() < d.sequences[size_t(b)].size();
  };
  const size_t mega = size_t(kMegabatch * batch);
  std::vector<std::vector<int64_t>> batches;
  for (size_t m = 0; m < order.size(); m += mega) {
    const auto first = order.begin() + long(m), last = order.begin() + long(std::min(order.size(), m + mega));
    std::stable_sort(first, last, by_length);
    for (auto b = first; b < last; b += std::min(long(batch), long(last - b)))
      batches.emplace_back(b, b + std::min(long(batch), long(last - b)));
  }
  return batches;
}

HostBatch collate(const Dataset& d, const std::vector<int64_t>& members, int64_t rows, int64_t length) {
  HostBatch b{rows,
              length,
              std::vector<int32_t>(size_t(rows * length)),
              std::vector<int32_t>(size_t(rows)),
              std::vector<float>(size_t(rows * length)),
              std::vector<float>(size_t(rows))};
  for (size_t r = 0; r < members.size(); ++r) {
    const std::vector<int32_t>& s = d.sequences[size_t(members[r])];
    std::copy(s.begin(), s.end(), b.tokens.begin() + long(r * size_t(length)));
    std::fill_n(b.mask.begin() + long(r * size_t(length)), s.size(), 1.0f);
    b.labels[r] = d.labels[size_t(members[r])];
    b.weights[r] = 1;
  }
  return b;
}

int64_t longest(const Dataset& d, const std::vector<int64_t>& members) {
  size_t n = 0;
  for (int64_t m : members) n = std::max(n, d.sequences[size_t(m)].size());
  return int64_t(n);
}

// The smallest bucket that holds `length` tokens.
int64_t bucket(int64_t length) {
  int64_t b = 16;
  while (b < length) b *= 2;
  return b;
}

// Mean of the real tokens' embeddings, then an MLP; the loss averages over
// real rows only, so padding changes nothing but the shape.
Array loss_fn(const std::vector<Array>& params, const Array& tokens, const Array& mask, const Array& labels,
              const Array& weights) {
  Array m = rt::expand_dims(mask, -1);
  Array pooled = rt::sum(rt::take(params[0], tokens) * m, {1}) / rt::maximum(rt::sum(m, {1}), 1.0);
  std::vector<Array> mlp(params.begin() + 1, params.end());
  Array logp = rt::log_softmax(loupe::samples::mlp_forward(mlp, pooled));
  Array per_row = -rt::sum(logp * rt::one_hot(labels, kClasses), {1});
  return rt::sum(per_row * weights) / rt::sum(weights);
}

}  // namespace

int main(int argc, char** argv) {
  loupe::samples::SampleArgs args(argc, argv, "ragged_batches", {{"--batch", "16"}});
  loupe::samples::Recording recording(args, "ragged_batches");
  const int steps = args.steps(args.ci() ? 40 : 200);
  const int64_t batch = args.number("--batch");
  // Not a multiple of the batch size: each epoch ends with a short batch.
  const Dataset data = make_dataset(args.ci() ? 20 * batch + batch / 2 : 60 * batch + batch / 2, 1);

  std::vector<Array> params = loupe::samples::mlp_init({kEmbed, kHidden, kClasses}, 3);
  params.insert(params.begin(), rt::random::normal(rt::random::key(4), {kVocab, kEmbed}, rt::f32, 0, 0.3));
  TrainState state{params, rt::adamw_init(params)};
  auto step = rt::jit("train_step",
                      [](TrainState s, Array tokens, Array mask, Array labels, Array weights) {
                        auto [loss, grads] = rt::value_and_grad(loss_fn)(s.params, tokens, mask, labels, weights);
                        auto [p, opt] = rt::adamw_update(rt::AdamW{.lr = 3e-3}, s.params, grads, s.opt);
                        return std::make_pair(TrainState{p, opt}, loss);
                      },
                      {.arg_names = {"state", "tokens", "mask", "labels", "weights"}});

  if (args.fixed()) {
    // FIX, part 2 (part 1 is the padding below): compile every bucket
    // before the loop, as a server warms up before taking traffic. These
    // compiles are `aot` in the trace, not recompiles.
    for (int64_t length = 16; length <= kMaxLength; length *= 2) {
      step.compile_for(state, rt::spec({batch, length}, rt::i32), rt::spec({batch, length}), rt::spec({batch}, rt::i32),
                       rt::spec({batch}));
    }
  }

  // The dataset is small: upload the batches of every epoch the loop will
  // see before training, so that the loop measures the steps alone.
  struct DeviceBatch {
    Array tokens, mask, labels, weights;
  };
  std::vector<DeviceBatch> batches;
  size_t per_epoch = 0;
  for (uint32_t e = 0; batches.size() < size_t(steps); ++e) {
    const auto epoch = group_by_length(data, batch, e);
    per_epoch = epoch.size();
    for (const std::vector<int64_t>& members : epoch) {
      const int64_t length = longest(data, members);
      HostBatch b = args.fixed() ? collate(data, members, batch, bucket(length))  // FIX: a bucket's length, all rows
                                 : collate(data, members, int64_t(members.size()), length);  // MISTAKE: ragged shapes
      batches.push_back({rt::array(b.tokens, {b.rows, b.length}), rt::array(b.mask, {b.rows, b.length}),
                         rt::array(b.labels, {b.rows}), rt::array(b.weights, {b.rows})});
    }
  }

  std::printf("ragged_batches (%s): %d steps, %zu batches per epoch of up to %lld sequences of %lld to %lld tokens\n",
              args.variant().c_str(), steps, per_epoch, (long long)batch, (long long)kMinLength, (long long)kMaxLength);
  loupe::samples::LoopClock clock;
  Array loss;
  for (int i = 0; i < steps; ++i) {
    prof::StepScope step_scope(i);
    const DeviceBatch& b = batches[size_t(i)];
    auto [next, l] = step(state, b.tokens, b.mask, b.labels, b.weights);  // MISTAKE: compiles for each new shape
    state = next;
    loss = l;
  }
  clock.report(steps);
  rt::JitStats s = step.stats();
  std::printf("final loss %.4f; train_step: %llu compiled in the loop, %llu ahead of time, %llu cache hits\n",
              loss.item<float>(), (unsigned long long)s.misses, (unsigned long long)s.aot, (unsigned long long)s.hits);
  return 0;
}
