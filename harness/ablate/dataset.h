// A search dataset: every configuration of a stage's search space on one GPU and task, with
// what each evaluation gave at each fidelity (search/fidelity.h) and what it cost, built from
// the records of an `evo evolve --generator exhaustive` run (`evo dataset`) and replayed by the
// simulation (ablate/simulate.h) as Kernel Tuner's simulation mode replays its cache files.
// Self-contained: it keeps the variants' sources, the ABI header and the tunables it was measured
// with, so a later edit of a variant does not change what it says. docs/evolve.md, "Datasets".
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.h"

namespace evo {

inline constexpr int kDatasetSchema = 1;

// One evaluation of a configuration at one fidelity.
struct DatasetEval {
  std::string outcome, reason;              // ok, correctness, timeout, ...
  double fitness_us = 0;                    // geomean of the shapes' medians; 0: none
  std::map<std::string, double> shapes_us;  // benchmark shape -> median µs
  double gpu_s = 0;
  std::string candidate_id;
};

struct DatasetConfig {
  std::string variant;  // variant id
  ParamSet params;      // in the variant's order
  // Where it ended: constraints, compile, resources, technique, unsupported (before the GPU);
  // else the screen's outcome (ok, correctness, ...); unmeasured when the run never reached it.
  std::string outcome, reason;
  std::optional<DatasetEval> screen, full;
};

struct DatasetVariant {
  std::string id, path, source;   // the file as measured
  std::vector<Tunable> tunables;  // the domain searched (front matter and stage.json extras)
};

struct Dataset {
  std::string gpu, task, run;  // gpu key, task name, the evolve run it was built from
  int stage = 0;
  std::string header;  // variants/common/evo_attn.cuh as measured (the rules #include it)
  std::vector<DatasetVariant> variants;
  std::vector<std::string> shapes;  // benchmark shapes, in the plan's order
  std::vector<DatasetConfig> configs;
};

nlohmann::json to_json(const Dataset& d);
// The file's text: one line per top-level field and one per configuration (diffable).
std::string dataset_text(const Dataset& d);
// A usage error naming `origin` and the field when something is missing or mistyped.
Dataset dataset_from_json(const nlohmann::json& j, const std::string& origin);
Dataset read_dataset(const std::filesystem::path& file);

// The permuted-landscape control: what the GPU said of each configuration (outcome, screen and
// full evaluation together) shuffled across the configurations that reached the GPU or were never
// measured, by a seeded Fisher-Yates; what was decided before the GPU (the rules, the compiler,
// the resource gate) stays where it was. The same multiset of measurements, no structure left.
Dataset permuted(const Dataset& d, uint64_t seed);

// The dataset of one run's records (evolve.run == run) over the stage's search space under
// `root`: a usage error when there are none, when they mix tasks or GPUs, or when a variant file
// changed since (its sha256 differs from the records').
Dataset build_dataset(const std::vector<nlohmann::json>& records, const std::string& run,
                      const std::filesystem::path& root, const Stage& stage);

}  // namespace evo
