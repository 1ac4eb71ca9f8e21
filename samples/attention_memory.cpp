// Attention memory: the naive attention materialises the [S, S] score
// matrix, so its memory grows with the square of the sequence length.
//
// The program runs an encoder's self-attention over ever longer inputs
// (doubling the sequence length) on a device with a fixed memory capacity,
// as one finds the longest input a model can take.
//
//   mistake: attention(..., naive): the scores, their scaled copy and the
//            steps of their softmax are S x S arrays per head. Memory peaks
//            near the capacity, and the next length runs out of memory. `loupe analyze`
//            reports a `memory` finding: the peak against capacity, the
//            out-of-memory, and the attention line as what was live there.
//   fixed:   attention(..., fused): a tiled online softmax that never holds
//            the scores; memory grows linearly in S and every length fits.
//
//   attention_memory --variant mistake|fixed [--steps N] [--size ci|full] [--out trace.db] [--memory MiB]
//
// --steps is the number of lengths tried (from 256, doubling); --memory
// sets the device's capacity, as a GPU's memory would bound it.
#include <cstdio>
#include <string>

#include "loupe/prof/record.h"
#include "sample.h"

namespace rt = loupe::rt;
namespace prof = loupe::prof;
using rt::Array;

int main(int argc, char** argv) {
  loupe::samples::SampleArgs args(argc, argv, "attention_memory", {{"--memory", ""}});
  loupe::samples::Recording recording(args, "attention_memory");
  const int lengths = args.steps(5);
  const int64_t heads = args.ci() ? 1 : 8, head_dim = args.ci() ? 16 : 64;
  const int64_t capacity_mib = args.number("--memory", args.ci() ? 70 : 560);
  const rt::Device device = rt::default_device();
  rt::set_memory_capacity(device, capacity_mib << 20);
  const rt::AttentionImpl impl = args.fixed() ? rt::AttentionImpl::fused  // FIX: memory linear in S
                                              : rt::AttentionImpl::naive;

  std::printf("attention_memory (%s): self-attention, %lld heads of %lld, device capacity %lld MiB\n",
              args.variant().c_str(), (long long)heads, (long long)head_dim, (long long)capacity_mib);
  std::vector<Array> keys = rt::random::split(rt::random::key(0), 3);
  for (int64_t i = 0, s = 256; i < lengths; ++i, s *= 2) {
    prof::Scope range(prof::intern("sequence length " + std::to_string(s)));
    rt::reset_peak_memory(device);
    try {
      Array q = rt::random::normal(keys[0], {1, heads, s, head_dim});
      Array k = rt::random::normal(keys[1], {1, heads, s, head_dim});
      Array v = rt::random::normal(keys[2], {1, heads, s, head_dim});
      Array out = rt::attention(q, k, v, /*causal=*/false, impl);  // MISTAKE: naive holds S x S scores per head
      out.block_until_ready();
    } catch (const rt::OutOfMemory& e) {
      rt::synchronize(device);  // let the work already queued finish, inside this length's range
      std::printf("S = %6lld: out of memory: %.1f MiB requested, %.1f MiB in use, capacity %.1f MiB\n", (long long)s,
                  double(e.requested) / (1 << 20), double(e.in_use) / (1 << 20), double(e.capacity) / (1 << 20));
      return 1;
    }
    std::printf("S = %6lld: peak %.1f MiB\n", (long long)s,
                double(rt::memory_stats(device).peak_allocated) / (1 << 20));
  }
  return 0;
}
