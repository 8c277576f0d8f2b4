// The state of one `evo evolve` run (evolve/loop.h), shared by the loop's files:
// loop_setup.cpp (options, GPUs, islands, what the run starts from), loop_proposals.cpp (from
// the generator to the candidates worth GPU time) and loop.cpp (the generations). Internal to
// the evolve layer.
#pragma once
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>

#include "compile/compile_record.h"
#include "compile/compile_set.h"
#include "core/errors.h"
#include "core/paths.h"
#include "evolve/admission.h"
#include "evolve/evolve_record.h"
#include "evolve/generator.h"
#include "evolve/islands.h"
#include "evolve/loop.h"
#include "evolve/novelty.h"
#include "evolve/request.h"
#include "evolve/screen_plan.h"
#include "evolve/source_store.h"
#include "gpu/device_select.h"
#include "run/context.h"
#include "run/device_pool.h"
#include "run/progress.h"
#include "run/sampler.h"
#include "run/session.h"
#include "run/stage_bench.h"
#include "search/strategy.h"
#include "store/atomic_file.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/record.h"
#include "store/records.h"

namespace evo::evolve_loop {

namespace fs = std::filesystem;
using nlohmann::json;

struct Loop {
  const EvolveOptions& o;
  Context ctx = Context::load();
  const Stage& stage = find_stage(ctx.stages, o.stage);
  Task task = parse_task(o.task);
  fs::path cache = o.cache_dir.empty() ? default_cache_dir() : fs::path(o.cache_dir);
  Compiler compiler{ctx.root, cache, ctx.gates};
  // What candidates are timed on, as `evo run` chooses (run/stage_bench.h).
  std::vector<std::string> bench = bench_sets_for(ctx, stage, o.bench);
  // The full evaluation draws the sampled gate cases with a seed chosen now (stored in every record).
  EvalPlan full = make_plan(ctx.gates, {task, ctx.gates.gate_sets, bench, ctx.gates.seeds, false, draw_gate_seed()});
  EvalPlan quick = screen_plan(ctx.gates, task, bench);  // the screen (evolve/screen_plan.h)
  std::vector<std::unique_ptr<Session>> sessions;        // one per GPU of --devices
  Session* session = nullptr;                            // the first: populations, references
  Island island;
  std::vector<Record> baseline, migrants;  // islands: elites from before the search; imported ones
  json pending_migration;                  // the import to write into this generation's trace line
  std::mutex mu;                           // the fields below, when several GPUs evaluate at once
  std::string no_gpu, arch = "sm_90a", run_id;
  fs::path trace;
  NoveltyFilter novelty{ctx.root, task.name(), cache};
  std::vector<std::unique_ptr<Variant>> external;  // variants made from generated sources
  std::vector<json> feedback;                      // failures that are not records
  std::vector<json> history;                       // every verdict of the run, compact (request "history")
  std::vector<Record> mine;                        // this run's records (resumed ones too)
  std::optional<TunableGenerator> tunable;
  std::vector<EvolveEntry> annotations{EvolveEntry{}};  // per GPU slot: the record's "evolve" entry
  std::vector<std::string> last_logs{""};               // per GPU slot: the compile log of its candidate
  double gpu_s = 0, best = 0, best_quick = 0;
  size_t evaluated = 0;
  int first_generation = 0;

  explicit Loop(const EvolveOptions& opts) : o(opts) {}
  void setup();
  void open_gpus(const SessionOptions& so);
  void read_history();
  MigrationScope scope() const {
    return {o.results_dir, task.name(), full.benchmark, session ? session->gpu().key : "", stage.number};
  }
  void import(int gen);
  void resume(const std::vector<Record>& records);
  void claim_run_id();
  void read_trace_history();
  std::vector<Observation> parents() const;
  json run_info(int gen) const;
  std::vector<Proposal> propose(int gen, json& step);
  std::vector<Proposal> ask_generator(int gen, json& step);
  std::optional<Candidate> candidate_of(const Proposal& p, ProposalVerdict& verdict);
  void drop_same_code(std::vector<std::optional<Candidate>>& cands, const std::vector<CompileResult>& compiled,
                      const std::vector<size_t>& compiled_at, std::vector<ProposalVerdict>& early);
  Record evaluate(size_t slot, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan);
  std::optional<Candidate> admit_proposal(const Proposal& p, ProposalVerdict& verdict);
  EvolveEntry entry_for(const Proposal& p, int gen) const;
  ProposalVerdict one(size_t slot, const Proposal& p, const Candidate* c, const CompileResult& compiled, int gen,
                      ProposalVerdict verdict);
  void generation(int gen, Progress& progress);
  void run_generation(int gen, Progress& progress, json& step);
  void lost_gpu(size_t slot, int gen, const Proposal& p, const Candidate& c, const CompileResult& compiled,
                const std::string& why, ProposalVerdict& verdict);
  std::string summary() const;
};

}  // namespace evo::evolve_loop
