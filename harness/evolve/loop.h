// `evo evolve`: generations of proposals -> novelty filter -> compile -> (quick screen) ->
// gates and timing -> noise-aware admission -> the next request, within a budget of
// GPU-seconds and generations. Every evaluation is a record (with an "evolve" entry: run,
// generation, parent, rationale, admission), so a run resumes from the records; each
// generation also appends request, response and verdicts to a trace JSONL. With --devices the
// proposals of a generation are evaluated on several GPUs at once; with --island i/N the run is
// one island of a search that exchanges elites with the others (evolve/islands.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "search/transfer.h"

namespace evo {

struct EvolveOptions {
  int stage = 0;
  std::string task = "fp16-d64";
  std::string generator = "builtin";  // builtin | random | exec:CMD
  int generations = 10;
  size_t population = 4;    // proposals per generation
  double budget_gpu_s = 0;  // 0: no GPU-second limit
  std::string op = "full";  // free | insight | full
  std::string resume;       // an earlier run id
  uint64_t rng_seed = 0;
  bool quick = false;     // screen on a small gate and one shape before the full evaluation
  double promote = 1.10;  // screened candidates within this factor of the best go on
  int generator_timeout_s = 120;
  std::string results_dir = "results", populations_dir = "populations", cache_dir;
  int device = 0;
  std::string devices;               // --devices 0,1|all: one evaluation per GPU at a time, from one queue
  std::string island, island_group;  // --island i/N (else the Slurm array task); the search's name
  int migrate_every = 0;             // islands import each other's elites every K generations
  double migrate_wait_s = 600;       // how long an import waits for an island that is behind
  std::vector<std::string> bench;    // benchmark sets or dims; empty: the stage's, else gates.json's
  // --prior DATASET: another domain of the stage warm-starts the builtin's model (search/transfer.h).
  std::shared_ptr<const TransferPrior> prior{};
};

// Runs the loop; without a GPU it runs the generations through the compile phase, feeding
// compile failures back, then throws the environment error (exit 2).
void run_evolve(const EvolveOptions& options);

}  // namespace evo
