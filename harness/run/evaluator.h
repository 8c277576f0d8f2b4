// One candidate, start to verdict: compile result in hand, gate cases on the GPU in a worker,
// outputs compared here against the cached reference, timing only for candidates that passed,
// the post-timing fresh-input check, and the record (DESIGN §3) that says all of it.
#pragma once
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "compile/compiler.h"
#include "core/candidate.h"
#include "gates/config.h"
#include "gpu/device_query.h"
#include "run/plan.h"
#include "run/reference.h"

namespace evo {

struct EvalEnv {
  const GatesConfig* gates = nullptr;
  const ReferenceStore* references = nullptr;
  std::filesystem::path support_cubin;
  std::filesystem::path work_root;  // scratch space for job files and outputs
  GpuInfo gpu;
  std::string run_id, nvrtc_version;
  int device = 0;
};

// Called with a phase label ("gate mission/…", "timing 8x16x16x2048x2048x128") as work goes on.
using ProgressFn = std::function<void(const std::string&)>;

// `prune_us`: the current elite's median on the first benchmark shape (0 = none).
nlohmann::json evaluate_candidate(const EvalEnv& env, const Candidate& c, const CompileResult& compiled,
                                  const EvalPlan& plan, double prune_us, const std::string& origin,
                                  const ProgressFn& progress);

}  // namespace evo
