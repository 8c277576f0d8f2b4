// Re-measuring the current elites on the GPU (for `evo gate` without --replay): each elite of
// each population of this GPU is evaluated again exactly as `evo run` would (every gate, then
// timing), and its fresh records are appended to `results_file` and returned.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "run/context.h"
#include "store/population.h"
#include "store/typed_record.h"

namespace evo {

struct RemeasureOptions {
  std::vector<std::string> tasks;  // empty = every task with a population for this GPU
  int stage = -1;                  // -1 = the highest stage with elites, per task
  std::vector<int> stages;         // when set: these stages (those with elites), instead of `stage`
  int top = 1;                     // how many elites per (task, stage)
  // Whose elites: the population of this benchmark ("default", or "custom-<hash>" as in
  // populations/<gpu>/<task>@custom-<hash>.json), where stage 9 and other custom-bench kernels live.
  std::string elites_of = "default";
  bool shipped = false;   // instead of stages and top: the kernels the task's regime table ships (evo export)
  bool deep_tier = true;  // with gates.json deep_gate.enabled; the regression gate (evo gate) times only
  std::filesystem::path results_file;
  std::filesystem::path cache_dir;
  std::string devices = "0";          // --devices: elites are shared out over these GPUs (one model)
  std::optional<uint32_t> gate_seed;  // draws the sampled gate cases (evo gate: per run); none: fixed sets only
  // `evo population remeasure` (other shapes for the per-regime elites, store/regimes.h):
  std::vector<std::string> bench;         // benchmark sets or dims; empty = gates.json's
  bool exact_sources = false;             // the recorded source (run/elite_source.h), not the file as it is now
  std::filesystem::path results_dir;      // with no results_file: a new <time>-<gpu>-<tag>.jsonl here
  std::filesystem::path populations_dir;  // read (and refreshed); empty: <root>/populations
  std::string tag = "gate", origin = "gate";
  bool update_populations = false;  // the gate never changes them; a re-measure for regimes does
};

std::vector<Record> remeasure_elites(const Context& ctx, const RemeasureOptions& options);

// The kernels a task's regime table dispatches to (what `evo export` ships), as elites to measure:
// candidate id, variant, recorded source and tunables; none when the population has no table.
std::vector<Elite> shipped_kernels(const Population& population);

}  // namespace evo
