// A GPU evaluation session: the GPU's identity, evo's support kernels, the reference store,
// scratch space, and where records and populations go. `evo run` and `evo gate` share it.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "run/context.h"
#include "compile/compiler.h"
#include "run/evaluator.h"
#include "run/plan.h"
#include "run/reference.h"

namespace evo {

struct SessionOptions {
  std::filesystem::path results_dir, populations_dir, cache_dir;
  int device = 0;
  std::string tag;  // part of the results file name, e.g. "stage3"
  std::filesystem::path results_file;  // explicit file; default <results_dir>/<time>-<gpu>-<tag>.jsonl
  bool update_populations = true;      // the gate measures elites; it never changes them
  std::filesystem::path compute_sanitizer;  // `evo run --sanitize`: would-be elites run under it
};

class Session {
 public:
  // Queries the GPU first: throws an environment error (exit 2) when there is none.
  Session(const Context& ctx, const Compiler& compiler, SessionOptions options);
  ~Session();

  void prepare_references(const EvalPlan& plan, const ProgressFn& progress);
  // Evaluates, appends the record durably, refreshes this GPU's populations; returns the record.
  nlohmann::json evaluate(const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                          const EliteStanding& standing, const std::string& origin, const ProgressFn& progress);
  nlohmann::json population(const Task& task, const std::string& benchmark) const;  // this GPU's, or empty
  const GpuInfo& gpu() const { return env_.gpu; }
  // `evo evolve` and `evo eval`: adds their fields to each record before it is written.
  void set_annotate(std::function<void(nlohmann::json&)> annotate) { annotate_ = std::move(annotate); }
  const std::filesystem::path& results_file() const { return results_file_; }

 private:
  void refresh_populations() const;
  SessionOptions options_;
  EvalEnv env_;
  std::unique_ptr<ReferenceStore> references_;
  std::filesystem::path results_file_;
  std::function<void(nlohmann::json&)> annotate_;
};

}  // namespace evo
