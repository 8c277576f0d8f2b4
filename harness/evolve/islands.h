// `evo evolve --island i/N`: the N islands of one search evolve separately — each its own
// generator seed, parents, novelty filter and run id — and every K generations
// (`--migrate-every K`) each imports the other islands' elites from the shared results folder,
// which the store already makes safe for several writers (locked, fsync'ed appends). An
// import at generation g takes, from every other island, its best kElites full evaluations of
// generations before g, once that island's trace shows generation g-1 done (or the island
// finished): so what an island imports, and hence what it proposes, depends only on the seeds
// and the fitness measured, not on which island ran faster. An island that is still behind
// after `wait_s` is imported as far as it got, and the trace says so.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/shard.h"
#include "store/typed_record.h"

namespace evo {

struct Island {
  unsigned index = 0, count = 1;
  std::string group;      // names the search: every island of it has the same
  std::string source;     // "--island" or "SLURM_ARRAY_TASK_ID", for the log line
  int migrate_every = 0;  // K: imports at generations K, 2K, ...; 0: never
  double wait_s = 600;    // how long an import waits for an island that is behind
  bool active() const { return count > 1; }
  std::string run_id(unsigned island) const;  // "ev-<group>-island<i>of<N>"
  std::string run_id() const { return run_id(index); }
  std::string text() const;                // "1/4"
  uint64_t seed(uint64_t rng_seed) const;  // this island's generator seed
  bool migrates_at(int generation) const {
    return active() && migrate_every > 0 && generation > 0 && generation % migrate_every == 0;
  }
  bool in_group(const Record& record) const;  // written by any island of this search
};

// --island (else the Slurm array task, as for --shard), --island-group (else
// SLURM_ARRAY_JOB_ID, else "seed<rng-seed>"). Bad values are usage errors (exit 1).
Island resolve_island(const std::string& option, const std::string& group, int migrate_every, double wait_s,
                      uint64_t rng_seed, const EnvLookup& env);

struct Migration {
  std::vector<Record> migrants;   // other islands' elites, best first
  std::vector<std::string> late;  // "island 2 had reached generation 0 of 1 after 600 s"
  nlohmann::json trace() const;   // for the island's trace line
};

// What island `self` imports at `generation` (see above) from the records under results_dir,
// for one task, stage and benchmark, measured on `gpu_key` (any model when empty: no GPU).
struct MigrationScope {
  std::filesystem::path results_dir;
  std::string task, benchmark, gpu_key;
  int stage = 0;
};
Migration migrate(const Island& self, int generation, const MigrationScope& scope);

// The generation an island's trace shows done (-1: none), or a very large number once the
// island wrote its `finished` line.
int island_progress(const std::filesystem::path& trace_file);

// The island's parents: the elites from before the search (records of no island of the group),
// its own best full evaluations and the migrants, deduplicated, best first.
std::vector<Record> island_ranked(const std::vector<Record>& baseline, const std::vector<Record>& own,
                                  const std::vector<Record>& migrants, size_t own_count);

// Full evaluations with fitness in `records` that match the scope (the baseline and migrant
// candidates), as the population derivation would rank them: best first, ties by id.
std::vector<Record> ranked_full(const std::vector<Record>& records, const MigrationScope& scope);

}  // namespace evo
