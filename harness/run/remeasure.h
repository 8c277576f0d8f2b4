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
#include "store/typed_record.h"

namespace evo {

struct RemeasureOptions {
  std::vector<std::string> tasks;  // empty = every task with a population for this GPU
  int stage = -1;                  // -1 = the highest stage with elites, per task
  int top = 1;                     // how many elites per (task, stage)
  std::filesystem::path results_file;
  std::filesystem::path cache_dir;
  std::string devices = "0";          // --devices: elites are shared out over these GPUs (one model)
  std::optional<uint32_t> gate_seed;  // draws the sampled gate cases (evo gate: per run); none: fixed sets only
};

std::vector<Record> remeasure_elites(const Context& ctx, const RemeasureOptions& options);

}  // namespace evo
