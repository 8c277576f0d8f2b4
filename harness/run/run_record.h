// The parts of a run record (docs/records.md) as the evaluator fills them in, built as the typed
// Record (store/typed_record.h) and written by its one writer: the candidate, machine and compile
// first, then each timed shape, each checked case, the gates' verdict and the fitness. Pure
// functions of their inputs (the head reads the clock and the host name), so tests build a whole
// record from a fake evaluation without a GPU.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "compile/compiler.h"
#include "core/candidate.h"
#include "core/outcome.h"
#include "core/stats.h"
#include "gates/timing_integrity.h"
#include "run/evaluator.h"
#include "run/plan.h"
#include "store/typed_record.h"

namespace evo {

// The record's parts known before any GPU work: the candidate, the run, the machine, the
// compile, and the empty lists and nulls a run record always carries.
Record run_record_head(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                       const std::string& origin);

// One timed shape from a worker's `timing` event (its fields as sent): the statistics, the
// shape, TFLOPS and GB/s, clocks, back-to-back and graph times (null when not measured).
TimingEntry run_timing_entry(const nlohmann::json& event_fields, const Shape& s, const Task& task);

// The statistics of a timing entry as the timing integrity rules read them.
SampleStats timing_stats(const TimingEntry& t);

// A timed shape's integrity part: what the timing loop checked (e.facts) and what the rules made
// of it (gates/timing_integrity.h); each full check judged with its distribution's tolerance.
TimingIntegrity timing_integrity_part(const TimingEvidence& e, const TimingJudgement& j, const GatesConfig& gates,
                                      const Task& task);

// What the gate phases found: the first failure, every checked case, the post-timing checks.
struct GateFindings {
  std::optional<Verdict> verdict;
  std::vector<GateCheck> checks, post;
  bool deterministic = true;
  bool stopped_at_first_failure = false;  // the worker was stopped at the case of `verdict`
};

// The correctness, determinism and post-timing gates' entries, the outcome and the reason, once
// the worker has ended (`worker_failure`: how it died, if it did).
void settle_record(Record& rec, const GateFindings& found, const std::optional<Verdict>& worker_failure,
                   size_t bench_shapes);

// Fitness: geometric mean over the benchmark shapes of the median (and of p90, for ties), only
// for a candidate that passed, was not pruned and was timed on every shape.
void add_fitness(Record& rec, size_t bench_shapes);

// The sampled gate cases of a record: the seed that drew them, how many, how many passed (empty
// when the plan drew none: the record says null).
std::optional<SampledGateSummary> sampled_summary(const EvalPlan& plan, const std::vector<GateCheck>& checks);

}  // namespace evo
