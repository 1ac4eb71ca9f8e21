// loupe synth -o FILE --events N: a realistic synthetic trace; with
// --ranks N, a job of N ranks with planted answers (job_synth.h).
#include <fmt/format.h>

#include <chrono>

#include "commands.h"
#include "loupe/prof/job_synth.h"
#include "loupe/prof/synth.h"
#include "text_format.h"

namespace loupe::cli {

namespace {

struct SynthArgs {
  std::string out;
  uint64_t events = 100'000;
  uint64_t seed = 1;
  int64_t ranks = 0;
  bool quiet = false;
};

// The options of `loupe synth`.
void add_options(CLI::App& cmd, SynthArgs& args) {
  cmd.description("Write a realistic synthetic trace (for tests, benchmarks and the viewer)");
  cmd.add_option("-o,--out", args.out, "trace file to write (with --ranks, the job's folder)")->required();
  cmd.add_option("--events", args.events, "number of events to write (up to 100 million; with --ranks, per rank)")
      ->check(CLI::Range(uint64_t(1), uint64_t(100'000'000)));
  cmd.add_option("--seed", args.seed, "random seed; the same seed writes the same trace");
  cmd.add_option("--ranks", args.ranks,
                 "write a job of this many ranks with a planted straggler, clock offsets and exposed communication")
      ->check(CLI::Range(int64_t(1), int64_t(65'536)));
  cmd.add_flag("-q,--quiet", args.quiet, "print nothing on success");
}

int run_synth_job(const SynthArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  prof::PlantedJob p = prof::write_synthetic_job(args.out, {args.ranks, args.events, args.seed});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!args.quiet) {
    fmt::print("wrote {}: {} ranks of {} events, {} steps each, in {:.2f} s\n", args.out, args.ranks,
               format_count(p.events_per_rank), p.steps, secs);
    fmt::print("planted: rank {} late by {} at each of the {} all-reduces of {} of the {} steps\n", p.straggler,
               format_duration(p.delay_ns), p.collectives_per_step, p.late_steps.size(), p.steps);
  }
  return kExitOk;
}

int run_synth(const SynthArgs& args) {
  if (args.ranks > 0) return run_synth_job(args);
  auto t0 = std::chrono::steady_clock::now();
  prof::SynthResult r = prof::write_synthetic_trace(args.out, {args.events, args.seed});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!args.quiet) {
    fmt::print("wrote {}: {} events, {} steps, {} of simulated run, in {:.2f} s ({:.2f} M events/s)\n", args.out,
               format_count(r.events), format_count(r.steps), format_duration(r.duration_ns), secs,
               double(r.events) / secs / 1e6);
  }
  return kExitOk;
}

}  // namespace

Command add_synth_command(CLI::App& app) { return make_command(app, "synth", add_options, run_synth); }

}  // namespace loupe::cli
