// `evo run --sanitize`: a candidate about to enter the elite runs the sanitizer cases (small,
// ragged shapes) once more under each compute-sanitizer tool, each tool in its own worker.
// Any error a tool reports, a tool that ends without its summary, or a wrong output under the
// instrumented run fails the candidate: nothing unchecked enters the elite.
#pragma once
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compile/compiler.h"
#include "core/candidate.h"
#include "core/outcome.h"
#include "run/evaluator.h"
#include "run/plan.h"
#include "store/typed_record.h"

namespace evo {

// The exit code compute-sanitizer is told to use when it reported an error; a worker never
// exits with it on its own.
inline constexpr int kSanitizerErrorExit = 86;

// What one tool's log says.
struct SanitizerFindings {
  bool summary_seen = false;  // "ERROR SUMMARY:" or "RACECHECK SUMMARY:" was printed
  std::string summary;        // that line, without the tool's "========= " prefix
  long errors = 0;            // errors as the summary counts them
  long hazards = 0;           // racecheck: hazards displayed, errors and warnings alike
  std::string first;          // the first report and its first detail line ("" when none)
  // Any report fails: memcheck/initcheck/synccheck errors and every racecheck hazard, warnings
  // included (the warning we met was an intra-warp write-after-read that only warp
  // reconvergence kept in order; the memory model does not promise it).
  long reports() const { return std::max(errors, hazards); }
};
SanitizerFindings parse_sanitizer_log(std::string_view log);

// memcheck and initcheck always; racecheck when the kernel uses shared memory (static or
// dynamic); synccheck when it uses barriers (ptxas "used N barriers") or shared memory.
std::vector<std::string> sanitizer_tools(const PtxasResources& resources, const LaunchGeometry& launch);

// $EVO_COMPUTE_SANITIZER, then PATH, then $CUDA_HOME/bin and /usr/local/cuda/bin.
std::optional<std::filesystem::path> find_compute_sanitizer();
// `evo run --sanitize`, before any work: its path, or an environment_error naming what to set
// (a run that cannot sanitize must not quietly admit elites); empty when not `wanted`.
std::filesystem::path required_compute_sanitizer(bool wanted);

struct SanitizerResult {
  SanitizerReport report;          // the record's gates.sanitizer
  std::optional<Verdict> verdict;  // set when the candidate fails
  double seconds = 0;
};

// Runs every tool `sanitizer_tools` names on the plan's sanitize cases.
SanitizerResult run_sanitizer(const EvalEnv& env, const Candidate& c, const CompileResult& compiled,
                              const EvalPlan& plan, const ProgressFn& progress);

}  // namespace evo
