// One candidate, start to verdict: compile result in hand, gate cases on the GPU in a worker,
// outputs compared here against the cached reference, timing only for candidates that passed,
// the post-timing fresh-input check, and the record (docs/records.md) that says all of it.
#pragma once
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "compile/compiler.h"
#include "core/candidate.h"
#include "gpu/device_query.h"
#include "policy/config.h"
#include "run/plan.h"
#include "run/reference.h"
#include "store/population.h"
#include "store/typed_record.h"

namespace evo {

struct EvalEnv {
  const GatesConfig* gates = nullptr;
  const ReferenceStore* references = nullptr;
  std::filesystem::path support_cubin;
  std::filesystem::path work_root;          // scratch space for job files and outputs
  std::filesystem::path compute_sanitizer;  // set by `evo run --sanitize`; empty: no sanitizer pass
  GpuInfo gpu;
  std::string run_id, nvrtc_version;
  int device = 0;
};

// Called with a phase label ("gate mission/…", "timing 8x16x16x2048x2048x128") as work goes on.
using ProgressFn = std::function<void(const std::string&)>;

// A worker job for a compiled candidate (mode "candidate" or "sanitize"), cases not yet added.
WorkerJob candidate_job(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const std::string& mode);

// Where a candidate stands against its stage's elite (this GPU, task and benchmark).
struct EliteStanding {
  double prune_us = 0;    // the last place's median on the first benchmark shape (0: a place is free)
  double entry_us = 0;    // the fitness to beat to enter the top-3 (0: fewer than 3 elites)
  bool is_elite = false;  // this candidate is already one of them (its new record replaces it)
  bool would_enter(double fitness_us) const { return is_elite || entry_us <= 0 || fitness_us < entry_us; }
};
EliteStanding elite_standing(const Population& population, int stage, const std::string& candidate_id);

// The record (docs/records.md) as the typed Record; store/typed_record.h's write_record writes it.
Record evaluate_candidate(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                          const EliteStanding& standing, const std::string& origin, const ProgressFn& progress);

}  // namespace evo
