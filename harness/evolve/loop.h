// `evo evolve`: generations of proposals -> novelty filter -> compile -> (quick screen) ->
// gates and timing -> noise-aware admission -> the next request, within a budget of
// GPU-seconds and generations. Every evaluation is a record (with an "evolve" entry: run,
// generation, parent, rationale, admission), so a run resumes from the records; each
// generation also appends request, response and verdicts to a trace JSONL.
#pragma once
#include <cstdint>
#include <string>

namespace evo {

struct EvolveOptions {
  int stage = 0;
  std::string task = "fp16-d64";
  std::string generator = "builtin";  // builtin | random | exec:CMD
  int generations = 10;
  size_t population = 4;               // proposals per generation
  double budget_gpu_s = 0;             // 0: no GPU-second limit
  std::string op = "full";             // free | insight | full
  std::string resume;                  // an earlier run id
  uint64_t rng_seed = 0;
  bool quick = false;                  // screen on a small gate and one shape before the full evaluation
  double promote = 1.10;               // screened candidates within this factor of the best go on
  int generator_timeout_s = 120;
  std::string results_dir = "results", populations_dir = "populations", cache_dir;
  int device = 0;
};

// Runs the loop; without a GPU it runs the generations through the compile phase, feeding
// compile failures back, then throws the environment error (exit 2).
void run_evolve(const EvolveOptions& options);

}  // namespace evo
