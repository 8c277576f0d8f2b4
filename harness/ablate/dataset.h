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

// 2: gpu_s without the deep tier, which is kept apart as deep_gate_s. A schema-1 file still reads:
// its gpu_s is the record's gpu_seconds, the deep tier included where one ran (deep_gate_s reads
// 0), until upgrade_dataset splits it with the run's records.
inline constexpr int kDatasetSchema = 2;

// One evaluation of a configuration at one fidelity.
struct DatasetEval {
  std::string outcome, reason;              // ok, correctness, timeout, ...
  double fitness_us = 0;                    // geomean of the shapes' medians; 0: none
  std::map<std::string, double> shapes_us;  // benchmark shape -> median µs
  // What the evaluation cost a strategy: the record's gpu_seconds less the deep tier, a cost of
  // the measuring run's top 3 (a would-be elite pays it on entering), not of the configuration.
  double gpu_s = 0;
  std::string candidate_id;
  double deep_gate_s = 0;  // phases.deep_gate_s of the record; 0: the deep tier did not run
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
  int schema = kDatasetSchema;  // as read: 1 leaves the deep tier inside gpu_s
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

// What upgrade_dataset did: evaluations matched to a record of the dataset's run (same candidate
// and phase), those whose deep tier it moved out of gpu_s, the seconds moved, and the evaluations
// no record matched (read as without a deep tier).
struct DatasetUpgrade {
  size_t matched = 0, deep_gated = 0, unmatched = 0;
  double deep_gate_s = 0;
};
// A schema-1 dataset as schema 2, with whatever records of its run survive (`evo dataset
// --upgrade`): each evaluation a record matches gets that record's phases.deep_gate_s taken out of
// gpu_s. A usage error when the dataset is not of schema 1 or a matched record's gpu_seconds is
// not the evaluation's gpu_s (not the run it was built from).
DatasetUpgrade upgrade_dataset(Dataset& d, const std::vector<nlohmann::json>& records);

}  // namespace evo
