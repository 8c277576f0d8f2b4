// A GPU evaluation session: the GPU's identity, evo's support kernels, the reference store,
// scratch space, and where records and populations go. `evo run` and `evo gate` share it.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compile/compiler.h"
#include "run/context.h"
#include "run/evaluator.h"
#include "run/plan.h"
#include "run/reference.h"
#include "store/record_follower.h"

namespace evo {

struct SessionOptions {
  std::filesystem::path results_dir, populations_dir, cache_dir;
  int device = 0;
  std::string tag;                          // part of the results file name, e.g. "stage3"
  std::filesystem::path results_file;       // explicit file; default <results_dir>/<time>-<gpu>-<tag>.jsonl
  bool update_populations = true;           // the gate measures elites; it never changes them
  std::filesystem::path compute_sanitizer;  // `evo run --sanitize`: would-be elites run under it
  std::string shard;                        // "i/N" under `--shard`: written into each record
};

class Session {
 public:
  // Queries the GPU first: throws an environment error (exit 2) when there is none.
  Session(const Context& ctx, const Compiler& compiler, SessionOptions options);
  ~Session();

  void prepare_references(const EvalPlan& plan, const ProgressFn& progress);
  // Sampled cases are new every run: their references leave the cache when the run is done.
  void drop_sampled_references(const EvalPlan& plan) const;
  // Evaluates, appends the record durably, refreshes this GPU's populations (update_populations);
  // returns the record as written, plus phases.detail.record_s (the time writing it took).
  Record evaluate(const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                  const EliteStanding& standing, const std::string& origin, const ProgressFn& progress);
  // The record of a candidate whose GPU failed under it (--devices): outcome crash, nothing
  // measured; appended like any other so the loss is visible and counted.
  Record record_device_failure(const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                               const std::string& origin, const std::string& why);
  Population population(const Task& task, const std::string& benchmark) const;  // this GPU's, or empty
  const GpuInfo& gpu() const { return env_.gpu; }
  // `evo evolve` and `evo eval`: adds their fields to each evaluated record before it is written.
  void set_annotate(std::function<void(Record&)> annotate) { annotate_ = std::move(annotate); }
  const std::filesystem::path& results_file() const { return results_file_; }
  // Derives this GPU's populations again from every record of the results folder, as the
  // process follows them (FollowedRecords: only what was appended since the last look is read),
  // under the folder's .lock; after each evaluation, and once more after parallel evaluations.
  void refresh_populations() const;

 private:
  void stamp(Record& record) const;  // the GPU's UUID and index, the shard
  SessionOptions options_;
  EvalEnv env_;
  std::unique_ptr<ReferenceStore> references_;
  std::filesystem::path results_file_;
  std::function<void(Record&)> annotate_;
};

// The records of a results folder as this process follows them (store/record_follower.h): one
// follower per folder (by canonical path) for the whole process, shared by every session writing
// there (one per GPU of a run) and by what reads the folder beside them (evo evolve's history),
// so each record is parsed once, whoever appended it. Holds the lock under which the sessions
// refresh their populations in turn (each derivation sees every record appended before it, and no
// older one overwrites a newer one): keep it only while using the follower.
class FollowedRecords {
 public:
  explicit FollowedRecords(const std::filesystem::path& results_dir);
  RecordFollower& operator*() const { return *follower_; }
  RecordFollower* operator->() const { return follower_; }

 private:
  std::unique_lock<std::mutex> lock_;
  RecordFollower* follower_;
};

// One session per GPU of `gpus` (one model, from query_devices), all appending to the first
// session's results file: one run, one results file, one population, whatever the GPU count.
std::vector<std::unique_ptr<Session>> open_sessions(const Context& ctx, const Compiler& compiler,
                                                    SessionOptions options, const std::vector<GpuInfo>& gpus);

}  // namespace evo
