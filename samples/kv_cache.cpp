// KV cache: generating tokens keeps every earlier token's keys and values,
// and that cache is most of a decoder's memory.
//
// A small decoder generates tokens for a batch of prompts. Each new token
// attends to all earlier ones, whose keys and values are kept per layer in
// a cache of [batch, kv_heads, length, head_dim]. With multi-head attention
// (MHA) every query head has its own keys and values; grouped-query
// attention (GQA) lets a group of query heads share one (here 4 per group:
// a quarter of the cache); multi-query attention (MQA) has one for all.
// The output has the same shape in all three.
//
//   mistake: MHA, and a cache that grows by one position per token
//            (concatenation), after a prompt of whatever length it has. The
//            cache's shape changes every token, so the jitted decode step
//            recompiles every token; and the MHA cache, copied longer at
//            each token, fragments the device's memory until the allocator
//            flushes its cache and then runs out. `loupe analyze` reports a
//            `memory` finding (retries, out of memory, the cache line as
//            what was live at the peak) and a `recompile` finding (shape
//            change) at the decode call.
//   fixed:   GQA, and fixed shapes: the prompt is left-padded to a fixed
//            length and the cache allocated for the whole sequence, with a
//            mask for the positions not written yet. One compile of each
//            function, a quarter of the cache; it fits.
//
// GQA is a choice made when a model is designed and trained (Llama 2 70B
// and Mistral use it): what the sample shows is what that choice is worth
// when serving.
//   --attention all runs MHA, GQA and MQA one after the other (fixed
//   shapes) in ranges `generate MHA` and so on, to compare their memory in
//   the memory track.
//
//   kv_cache --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db]
//            [--attention mha|gqa|mqa|all] [--memory MiB]
//
// --steps is the number of batches of prompts served.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "loupe/prof/record.h"
#include "sample.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using rt::Array;

namespace {

struct Config {
  int64_t batch, vocab, embed, heads, kv_heads, head_dim, layers, max_prompt, new_tokens;
  int64_t groups() const { return heads / kv_heads; }
  int64_t max_length() const { return max_prompt + new_tokens; }
};

struct Layer {
  Array wq, wk, wv, wo, w1, w2;
  auto tree_fields() { return std::tie(wq, wk, wv, wo, w1, w2); }
};
struct Model {
  Array embed, unembed;
  std::vector<Layer> layers;
  auto tree_fields() { return std::tie(embed, unembed, layers); }
};

// Per layer, keys and values of every position so far: [batch, kv_heads,
// length, head_dim].
struct Cache {
  std::vector<Array> k, v;
  auto tree_fields() { return std::tie(k, v); }
};
// The same at a fixed length, with `valid` [batch, length] marking the
// positions that hold a token (not padding, not written yet) and `pos`
// where the next one goes.
struct PaddedCache {
  std::vector<Array> k, v;
  Array valid, pos;
  auto tree_fields() { return std::tie(k, v, valid, pos); }
};

Model init_model(const Config& c, uint64_t seed) {
  std::vector<Array> keys = rt::random::split(rt::random::key(seed), int(2 + 6 * c.layers));
  auto w = [&](size_t i, int64_t in, int64_t out) {
    return rt::random::normal(keys[i], {in, out}, rt::f32, 0, 1.0 / std::sqrt(double(in)));
  };
  Model m{rt::random::normal(keys[0], {c.vocab, c.embed}), w(1, c.embed, c.vocab), {}};
  for (int64_t l = 0; l < c.layers; ++l) {
    size_t k = size_t(2 + 6 * l);
    m.layers.push_back({w(k, c.embed, c.heads * c.head_dim), w(k + 1, c.embed, c.kv_heads * c.head_dim),
                        w(k + 2, c.embed, c.kv_heads * c.head_dim), w(k + 3, c.heads * c.head_dim, c.embed),
                        w(k + 4, c.embed, 4 * c.embed), w(k + 5, 4 * c.embed, c.embed)});
  }
  return m;
}

// Attention of queries [B, KVH, G, Sq, D] (G query heads per key/value
// head) to keys and values [B, KVH, Sk, D]; `mask` [B, 1, 1, Sq, Sk] says
// which keys each query sees. The G heads of a group are rows of one
// matrix product with their shared keys: no copy of the keys per head.
Array attend(const Array& q, const Array& k, const Array& v, const Array& mask) {
  Array kg = rt::expand_dims(k, 2), vg = rt::expand_dims(v, 2);
  Array s = rt::matmul(q, rt::transpose(kg, {0, 1, 2, 4, 3})) / std::sqrt(double(q.dim(-1)));
  return rt::matmul(rt::softmax(rt::where(mask, s, -1e9)), vg);
}

// One transformer layer over x [B, Sq, E]; the new positions' keys and
// values are put in the cache by `store`, which returns the cache to attend to.
template <typename Store>
Array layer(const Config& c, const Layer& w, const Array& x, const Array& mask, Store store) {
  int64_t b = x.dim(0), sq = x.dim(1);
  Array q =
      rt::transpose(rt::reshape(rt::matmul(x, w.wq), {b, sq, c.kv_heads, c.groups(), c.head_dim}), {0, 2, 3, 1, 4});
  Array k = rt::transpose(rt::reshape(rt::matmul(x, w.wk), {b, sq, c.kv_heads, c.head_dim}), {0, 2, 1, 3});
  Array v = rt::transpose(rt::reshape(rt::matmul(x, w.wv), {b, sq, c.kv_heads, c.head_dim}), {0, 2, 1, 3});
  auto [keys, values] = store(k, v);
  Array o = attend(q, keys, values, mask);  // [B, KVH, G, Sq, D]
  o = rt::reshape(rt::transpose(o, {0, 3, 1, 2, 4}), {b, sq, c.heads * c.head_dim});
  Array h = x + rt::matmul(o, w.wo);
  return h + rt::matmul(rt::gelu(rt::matmul(h, w.w1)), w.w2);
}

// The greedy next token after the last position of x.
Array next_token(const Model& m, const Array& x) {
  Array last = rt::squeeze(rt::slice(x, {0, x.dim(1) - 1, 0}, {x.dim(0), x.dim(1), x.dim(2)}), 1);
  return rt::argmax(rt::matmul(last, m.unembed), -1);
}

// ---- The mistake: shapes that follow the sequence ------------------------

// The prompt as it is, [B, P]: its cache has P positions.
std::pair<Array, Cache> prefill_growing(const Config& c, const Model& m, const Array& tokens) {
  int64_t p = tokens.dim(1);
  Array causal = rt::reshape(rt::less_equal(rt::arange(0, double(p)), rt::reshape(rt::arange(0, double(p)), {p, 1})),
                             {1, 1, 1, p, p});
  Cache cache;
  Array x = rt::take(m.embed, tokens);
  for (const Layer& w : m.layers) {
    x = layer(c, w, x, causal, [&](const Array& k, const Array& v) {
      cache.k.push_back(k);
      cache.v.push_back(v);
      return std::make_pair(k, v);
    });
  }
  return {next_token(m, x), cache};
}

// One token: the cache grows by one position, so its shape is new each time.
std::pair<Array, Cache> decode_growing(const Config& c, const Model& m, Cache cache, const Array& token) {
  Array x = rt::take(m.embed, rt::reshape(token, {token.dim(0), 1}));
  Array all = rt::full({1, 1, 1, 1, cache.k[0].dim(2) + 1}, 1, rt::boolean);
  for (size_t l = 0; l < m.layers.size(); ++l) {
    x = layer(c, m.layers[l], x, all, [&](const Array& k, const Array& v) {
      cache.k[l] = rt::concat({cache.k[l], k}, 2);  // MISTAKE: a new, longer cache every token
      cache.v[l] = rt::concat({cache.v[l], v}, 2);
      return std::make_pair(cache.k[l], cache.v[l]);
    });
  }
  return {next_token(m, x), cache};
}

// ---- The fix: one shape for the whole generation ------------------------

// The prompt left-padded to max_prompt tokens ([B, max_prompt], with
// `real` [B, max_prompt] true on its tokens), into a cache of max_length
// positions.
std::pair<Array, PaddedCache> prefill_padded(const Config& c, const Model& m, const Array& tokens, const Array& real) {
  int64_t b = tokens.dim(0), p = c.max_prompt, s = c.max_length();
  Array causal = rt::less_equal(rt::arange(0, double(p)), rt::reshape(rt::arange(0, double(p)), {p, 1}));
  Array mask = rt::logical_and(rt::reshape(causal, {1, 1, 1, p, p}), rt::reshape(real, {b, 1, 1, 1, p}));
  Array rest = rt::zeros({b, c.kv_heads, s - p, c.head_dim});
  PaddedCache cache{
      {}, {}, rt::concat({real, rt::full({b, s - p}, 0, rt::boolean)}, 1), rt::full({}, double(p), rt::i32)};
  Array x = rt::take(m.embed, tokens);
  for (const Layer& w : m.layers) {
    x = layer(c, w, x, mask, [&](const Array& k, const Array& v) {
      cache.k.push_back(rt::concat({k, rest}, 2));  // FIX: the cache has its final length from the start
      cache.v.push_back(rt::concat({v, rest}, 2));
      return std::make_pair(k, v);
    });
  }
  return {next_token(m, x), cache};
}

// One token, written at position `pos` of the fixed-length cache.
std::pair<Array, PaddedCache> decode_padded(const Config& c, const Model& m, PaddedCache cache, const Array& token) {
  int64_t b = token.dim(0), s = c.max_length();
  Array here = rt::equal(rt::arange(0, double(s)), cache.pos);  // [S]: the position being written
  cache.valid = rt::logical_or(cache.valid, rt::reshape(here, {1, s}));
  Array mask = rt::reshape(cache.valid, {b, 1, 1, 1, s});
  Array x = rt::take(m.embed, rt::reshape(token, {b, 1}));
  Array at = rt::reshape(here, {1, 1, s, 1});
  for (size_t l = 0; l < m.layers.size(); ++l) {
    x = layer(c, m.layers[l], x, mask, [&](const Array& k, const Array& v) {
      cache.k[l] = rt::where(at, k, cache.k[l]);  // FIX: same shape every token
      cache.v[l] = rt::where(at, v, cache.v[l]);
      return std::make_pair(cache.k[l], cache.v[l]);
    });
  }
  cache.pos = cache.pos + 1;
  return {next_token(m, x), cache};
}

// Prompts for round `round`: all of one length, a little shorter each round.
std::vector<int32_t> prompts(const Config& c, int64_t length, int round) {
  std::mt19937 gen{uint32_t(round)};
  std::uniform_int_distribution<int32_t> word(1, int32_t(c.vocab) - 1);
  std::vector<int32_t> t(size_t(c.batch * length));
  for (int32_t& w : t) w = word(gen);
  return t;
}

// Serves `rounds` batches of prompts with the decoder `kind` (MHA, GQA or
// MQA); prints what it generated.
void serve(const Config& c, const std::string& kind, bool fixed_shapes, int rounds) {
  Model model = init_model(c, 1);
  const rt::JitOptions prefill_args{.arg_names = {"model", "tokens", "real"}};
  const rt::JitOptions decode_args{.arg_names = {"model", "cache", "token"}};
  auto prefill = rt::jit(
      "prefill " + kind, [&](Model m, Array t) { return prefill_growing(c, m, t); }, prefill_args);
  auto decode = rt::jit(
      "decode " + kind, [&](Model m, Cache k, Array t) { return decode_growing(c, m, k, t); }, decode_args);
  auto prefill_fixed = rt::jit(
      "prefill " + kind, [&](Model m, Array t, Array r) { return prefill_padded(c, m, t, r); }, prefill_args);
  auto decode_fixed = rt::jit(
      "decode " + kind, [&](Model m, PaddedCache k, Array t) { return decode_padded(c, m, k, t); }, decode_args);
  for (int round = 0; round < rounds; ++round) {
    const int64_t length = c.max_prompt - 5 * round % (c.max_prompt / 2);
    std::vector<int32_t> tokens = prompts(c, length, round);
    std::vector<Array> generated;
    if (!fixed_shapes) {
      auto [token, cache] = prefill(model, rt::array(tokens, {c.batch, length}));
      generated.push_back(token);
      for (int64_t t = 1; t < c.new_tokens; ++t) {
        std::tie(token, cache) = decode(model, cache, token);  // MISTAKE: compiles for every new cache length
        generated.push_back(token);
      }
    } else {
      // FIX: left-pad the prompt to max_prompt tokens, marking the real ones.
      std::vector<int32_t> padded(size_t(c.batch * c.max_prompt), 0);
      std::vector<uint8_t> real(padded.size(), 0);
      for (int64_t r = 0; r < c.batch; ++r) {
        for (int64_t i = 0; i < length; ++i) {
          size_t at = size_t(r * c.max_prompt + c.max_prompt - length + i);
          padded[at] = tokens[size_t(r * length + i)];
          real[at] = 1;
        }
      }
      Array real_mask = rt::from_host(real.data(), {c.batch, c.max_prompt}, rt::boolean);
      auto [token, cache] = prefill_fixed(model, rt::array(padded, {c.batch, c.max_prompt}), real_mask);
      generated.push_back(token);
      for (int64_t t = 1; t < c.new_tokens; ++t) {
        std::tie(token, cache) = decode_fixed(model, cache, token);
        generated.push_back(token);
      }
    }
    Array out = rt::reshape(rt::concat(generated, 0), {c.new_tokens, c.batch});
    std::vector<int32_t> host = out.to_vector<int32_t>();  // one read per round
    std::printf("  round %d: prompt of %lld tokens, generated %s, first tokens %d %d %d\n", round, (long long)length,
                rt::type_str(out.dtype(), out.shape()).c_str(), host[0], host[size_t(c.batch)],
                host[size_t(2 * c.batch)]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  loupe::samples::SampleArgs args(argc, argv, "kv_cache", {{"--attention", ""}, {"--memory", ""}});
  loupe::samples::Recording recording(args, "kv_cache");
  const int rounds = args.steps(2);
  Config c = args.ci() ? Config{16, 256, 128, 8, 8, 16, 2, 32, 96} : Config{32, 512, 256, 8, 8, 32, 4, 64, 64};
  const rt::Device device = rt::default_device();
  std::string attention = args.text("--attention");
  if (attention.empty()) attention = args.fixed() ? "gqa" : "mha";  // FIX: a quarter of the cache
  // The device's memory: enough for GQA's cache, not for MHA's (comparing
  // all three takes a device big enough for each).
  const long capacity_mib = attention == "all" ? (args.ci() ? 32 : 160) : (args.ci() ? 9 : 72);
  rt::set_memory_capacity(device, args.number("--memory", capacity_mib) << 20);
  std::vector<std::string> kinds =
      attention == "all" ? std::vector<std::string>{"mha", "gqa", "mqa"} : std::vector<std::string>{attention};
  std::printf("kv_cache (%s): batch %lld, %lld layers, %lld query heads of %lld, prompts up to %lld tokens, %lld new\n",
              args.variant().c_str(), (long long)c.batch, (long long)c.layers, (long long)c.heads,
              (long long)c.head_dim, (long long)c.max_prompt, (long long)c.new_tokens);
  for (const std::string& kind : kinds) {
    if (kind != "mha" && kind != "gqa" && kind != "mqa") {
      std::fprintf(stderr, "kv_cache: --attention is mha, gqa, mqa or all\n");
      return 2;
    }
    c.kv_heads = kind == "mha" ? c.heads : kind == "gqa" ? c.heads / 4 : 1;
    const std::string name = kind == "mha" ? "MHA" : kind == "gqa" ? "GQA" : "MQA";
    prof::Scope range(prof::intern("generate " + name));
    std::printf("%s: %lld key/value heads, cache %.2f MiB\n", name.c_str(), (long long)c.kv_heads,
                double(2 * c.layers * c.batch * c.kv_heads * c.max_length() * c.head_dim * 4) / (1 << 20));
    rt::reset_peak_memory(device);
    try {
      serve(c, name, args.fixed(), rounds);
    } catch (const rt::OutOfMemory& e) {
      rt::synchronize(device);  // let the work already queued finish, inside this range
      std::printf("  out of memory: %.2f MiB requested, %.2f MiB in use, capacity %.2f MiB\n",
                  double(e.requested) / (1 << 20), double(e.in_use) / (1 << 20), double(e.capacity) / (1 << 20));
      return 1;
    }
    std::printf("  peak memory %.2f MiB\n", double(rt::memory_stats(device).peak_allocated) / (1 << 20));
  }
  return 0;
}
