// Populations: the elite top-3 per (gpu, task, stage), a pure function of the records.
// `Population`, `Elite` and `RegimeTable` (store/regimes.h) are the file as C++ types: one
// writer (population_json) and one reader (parse_population), which refuses a value no evo
// writes with the file and the field named (store/strict_fields.h).
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "store/regimes.h"
#include "store/typed_record.h"

namespace evo {

inline constexpr const char* kPopulationSchemaVersion = "1.0";
inline constexpr int kElites = 3;

// What an elite's gates showed: the checked cases and the worst relative error among them.
struct EliteGates {
  long long correctness_checks = 0, post_timing_checks = 0;
  double max_rel_l2 = 0;
};

// An elite's time on one benchmark shape (its record's timing entry, in brief).
struct EliteTime {
  std::string shape;
  double median_us = 0, p90_us = 0, tflops = 0;
};

// One place of a stage's top three, copied from the candidate's latest record of the benchmark.
struct Elite {
  int rank = 0;                                                                               // 1 = best
  std::optional<std::string> candidate_id, parent, source_path, source_sha256, run_id, time;  // null: unknown
  std::string variant;
  ParamSet params;                              // in key order (sorted), as the file has them
  Fitness fitness;                              // the record's
  nlohmann::json resources, launch, technique;  // the record's compile.* parts as recorded, or null
  EliteGates gates;
  std::vector<EliteTime> timing;
  nlohmann::json extra = nlohmann::json::object();  // fields of a newer minor version

  double fitness_us() const { return fitness.geomean_median_us.value_or(0.0); }  // 0: none
};

struct Population {
  SchemaVersion schema;
  std::string gpu, task;
  std::optional<std::string> benchmark;      // "default" or "custom-<hash>"; absent in older files
  std::map<int, std::vector<Elite>> stages;  // best first
  std::optional<RegimeTable> regimes;        // the default benchmark's file only
  nlohmann::json extra = nlohmann::json::object();

  // The fastest of each stage's best elite over the stages, or nullptr; with `eligible`, of each
  // stage's best eligible one (the task's default kernel: its best deep-gated elite).
  const Elite* fastest_elite(const std::function<bool(const Elite&)>& eligible = nullptr) const;
};

// Derives every population present in the records: key "<gpu_key>/<task>" (default benchmark)
// or "<gpu_key>/<task>@<benchmark>".
std::map<std::string, Population> derive_populations(const std::vector<nlohmann::json>& records);
// The same from records already read (read_record): those of kind "run" count, in the given order.
std::map<std::string, Population> derive_typed_populations(const std::vector<const Record*>& records);

// populations/<gpu>/<task>.json for the default benchmark, <task>@<benchmark>.json otherwise
// (fitness is a geometric mean over one benchmark set, so sets are never ranked together).
std::filesystem::path population_path(const std::filesystem::path& dir, const std::string& gpu, const std::string& task,
                                      const std::string& benchmark);
// Writes the population's file atomically under populations/.lock, unless it holds that text
// already (then the file is left untouched, its time stamp too).
void write_population(const std::filesystem::path& populations_dir, const Population& population);
// Removes the population files under populations_dir that `derived` (derive_populations's keys)
// does not name, under populations/.lock, and returns them: a task whose every elite was withdrawn
// by revoked.json derives no population, and its old file would go on serving the withdrawn
// kernels (the fp8 causal tasks, 2026-11-30). Other files (the lock, temp files) stay.
std::vector<std::filesystem::path> remove_underived_populations(const std::filesystem::path& populations_dir,
                                                                const std::map<std::string, Population>& derived);

// The one JSON mapping of a population: the file's text is population_json(p).dump(2) + "\n".
nlohmann::json population_json(const Population& population);
nlohmann::json elite_json(const Elite& elite);  // one of a stage's list (and a generator request's elites)
// Reads and validates a population file: refuses another major version, warns (via `warning`)
// on a newer minor, and refuses an impossible value (a negative time, a params value that is not
// an integer, an unknown regime, a regime kernel it does not list). Throws a usage error that
// names the file and the field and says how to restore it (`evo population rebuild`).
Population read_population(const std::filesystem::path& file, std::string* warning = nullptr);
Population parse_population(const std::string& text, const std::string& origin, std::string* warning = nullptr);

// The elites of one stage of a population (empty if none).
std::vector<Elite> stage_elites(const Population& population, int stage);

}  // namespace evo
