#include "run/evaluator.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "compile/call_state.h"
#include "compile/compile_record.h"
#include "core/errors.h"
#include "core/paths.h"
#include "gates/correctness.h"
#include "gates/verdict.h"
#include "run/eval_phases.h"
#include "run/job_events.h"
#include "run/run_record.h"
#include "run/sampler.h"
#include "run/sanitizer.h"
#include "run/worker_client.h"
#include "store/population.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

WorkerJob candidate_job(const EvalEnv& env, const Candidate& c, const CompileResult& compiled,
                        const std::string& mode) {
  WorkerJob job;
  job.mode = mode;
  job.device = env.device;
  job.task = c.task;
  job.support_cubin = env.support_cubin.string();
  job.cubin = compiled.cubin_path.string();
  job.launch = *compiled.launch;
  job.timing = env.gates->timing;
  job.reference_kernel = env.gates->limits.reference_kernel;
  return job;
}

EliteStanding elite_standing(const Population& population, int stage, const std::string& candidate_id) {
  EliteStanding s;
  const auto elites = stage_elites(population, stage);
  // Prune only a candidate that cannot place: against the last place of a full top 3. With a
  // place free, even a slow candidate enters (and so pays the deep tier, when it is on).
  if (elites.size() >= size_t(kElites)) {
    const Elite& last = elites[size_t(kElites) - 1];
    s.entry_us = last.fitness_us();
    if (!last.timing.empty()) s.prune_us = last.timing[0].median_us;
  }
  for (const auto& e : elites)
    if (e.candidate_id == candidate_id) s.is_elite = true;
  return s;
}

namespace {

// What the worker is asked to do, and where each case's output and reference live.
struct GpuJob {
  WorkerJob job;
  std::map<std::string, std::pair<CaseSpec, std::string>> refs;  // case id -> spec, reference path
  std::map<std::string, BenchSpec> bench_by_id;
};

GpuJob prepare_job(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                   const EliteStanding& standing, const fs::path& work) {
  GpuJob g;
  g.job = candidate_job(env, c, compiled, "candidate");
  g.job.prune_us = standing.prune_us;
  if (plan.timing) g.job.timing = *plan.timing;
  int k = 0;
  for (CaseSpec cs : plan.gate_cases) {
    g.refs[cs.id] = {cs, env.references->path_for(c.task, cs).string()};
    cs.out_path = (work / fmt::format("gate{}.out", k++)).string();
    g.job.cases.push_back(cs);
  }
  for (const BenchSpec& b : plan.bench) {  // checked on the GPU (gpu/timing_loop.h): no files
    g.bench_by_id[b.id] = b;
    g.job.bench.push_back(b);
  }
  return g;
}

// The parent's side of one candidate job: each worker event goes to its handler, which checks
// it against the job (an event about a case or file the parent did not ask for is a protocol
// break: crash) and against the verdict rules of gates/verdict.h.
class GpuEvaluation {
 public:
  GpuEvaluation(const EvalEnv& env, const Candidate& c, const GpuJob& g, Record& rec, const ProgressFn& progress)
      : env_(env), c_(c), g_(g), rec_(rec), progress_(progress) {}

  void drive(WorkerClient& worker) {
    while (auto ev = worker.next_event()) {
      if (!handle(*ev, worker)) break;
    }
  }

  GateFindings found;
  EvalPhases phases;
  std::string nondeterministic_case;  // the first case whose two launches differed

 private:
  // false: stop reading (the gate failed and the worker was told to stop)
  bool handle(const WorkerEvent& ev, WorkerClient& worker) {
    phases.on_event(ev);
    switch (ev.kind) {
      case WorkerEventKind::phase: {
        const std::string& what = ev.case_id.empty() ? ev.bench : ev.case_id;
        progress_(what.empty() ? ev.phase : ev.phase + " " + what);
        return true;
      }
      case WorkerEventKind::case_done: return on_case_done(ev, worker);
      case WorkerEventKind::await: return on_await(worker);
      case WorkerEventKind::timing: return on_timing(ev, worker);
      case WorkerEventKind::post_done: return on_post_done(ev, worker);
      case WorkerEventKind::error:
        if (ev.outcome == "environment")
          throw environment_error(ev.reason.empty() ? "worker could not reach the GPU" : ev.reason);
        return true;
      case WorkerEventKind::device:
      case WorkerEventKind::done: return true;
    }
    return true;
  }

  bool on_case_done(const WorkerEvent& ev, WorkerClient& worker) {
    if (auto why = foreign_event(g_.job, ev)) return reject(worker, *why);
    const auto& [spec, ref_path] = g_.refs.at(ev.case_id);
    found.checks.push_back(check_case(ev, spec, ref_path, ""));
    if (!ev.deterministic.value_or(true) && found.deterministic) {
      found.deterministic = false;
      nondeterministic_case = spec.id;
    }
    if (found.verdict && env_.gates->verdict.stop_at_first_failure) {  // the rest cannot change it
      worker.stop();
      found.stopped_at_first_failure = true;
      return false;
    }
    return true;
  }

  bool on_await(WorkerClient& worker) {
    std::optional<Verdict>& verdict = found.verdict;
    if (!verdict) {
      verdict = determinism_verdict(found.deterministic);
      if (verdict)
        verdict->reason = nondeterministic_case + ": " + verdict->reason;  // names the case (and its dimensions)
    }
    worker.send(verdict ? "stop" : "continue");
    return !verdict;
  }

  bool on_timing(const WorkerEvent& ev, WorkerClient& worker) {
    if (auto why = foreign_event(g_.job, ev)) return reject(worker, *why);
    const BenchSpec& b = g_.bench_by_id.at(ev.bench);
    if (ev.fields.contains("stats")) {
      TimingEntry t = run_timing_entry(ev.fields, b.timed.shape, c_.task);
      const VerdictPolicy& policy = env_.gates->verdict;
      const json before = t.extra["sm_clock_before_mhz"], after = t.extra["sm_clock_after_mhz"];
      if (before.is_number() && after.is_number())
        if (auto w = clock_drop_warning(b.id, before.get<double>(), after.get<double>(), policy))
          rec_.warnings->push_back(*w);
      if (t.rse)
        if (auto w = noisy_timing_warning(b.id, *t.rse, policy)) rec_.warnings->push_back(*w);
      if (ev.integrity) judge_integrity(b, *ev.integrity, t);
      rec_.timing->push_back(std::move(t));
    }
    if (ev.pruned) rec_.pruned = true;
    return true;
  }

  // The timing integrity rules over what the loop checked (docs/safety.md "Timing integrity").
  void judge_integrity(const BenchSpec& b, const TimingFacts& facts, TimingEntry& t) {
    TimingEvidence e;
    e.bench = b.id;
    e.shape = b.timed.shape;
    e.stats = timing_stats(t);
    e.facts = facts;
    e.timed_tol = env_.gates->tolerance(c_.task, b.timed.inputs);
    e.fresh_tol = env_.gates->tolerance(c_.task, b.fresh.inputs);
    e.fresh_inputs = b.fresh.inputs;
    e.floor_us = env_.gates->floor_us(env_.gpu.key, c_.task, b.timed.shape);
    const TimingJudgement j = judge_timing(e, env_.gates->verdict);
    t.integrity = timing_integrity_part(e, j, *env_.gates, c_.task);
    if (j.verdict) record_failure(found.verdict, j.verdict->outcome, j.verdict->reason);
  }

  // A benchmark shape's last timed sample (or a pruned shape's one launch) on fresh inputs of its
  // post-timing distribution, every element checked on the GPU.
  bool on_post_done(const WorkerEvent& ev, WorkerClient& worker) {
    if (auto why = foreign_event(g_.job, ev)) return reject(worker, *why);
    const BenchSpec& b = g_.bench_by_id.at(ev.bench);
    GateCheck j = check_case(ev, b.fresh, "", "timing, fresh inputs ");
    j.us = ev.us;
    found.post.push_back(std::move(j));
    return true;
  }

  GateCheck check_case(const WorkerEvent& ev, const CaseSpec& spec, const std::string& ref_path,
                       const std::string& prefix) {
    const Tolerance& tol = env_.gates->tolerance(c_.task, spec.inputs);  // per input distribution
    OutputCheck oc = ev.device_check ? check_counts(*ev.device_check, tol, spec.shape)
                                     : phases.check(ev.out, ref_path, c_.task.dtype, tol.for_keys(spec.shape.seq_kv));
    GateCheck j = read_gate_check(check_json(oc));
    if (ev.device_check) j.extra["device_check"] = to_json(*ev.device_check);  // its seconds and device memory
    j.case_id = spec.id;
    j.shape = spec.shape.dims();
    j.seed = spec.seed;
    j.inputs = spec.inputs;
    j.inputs_intact = ev.inputs_intact.value_or(true);
    j.guards_intact = ev.guards_intact.value_or(true);
    j.deterministic = ev.deterministic;
    if (ev.counters_zero) j.extra["counters_zero"] = *ev.counters_zero;  // split kernels' cases only
    if (ev.workspace_repeat_same) j.extra["workspace_repeat_same"] = *ev.workspace_repeat_same;
    if (auto s = phases.case_seconds(ev.case_id)) j.extra["s"] = std::round(*s * 1e4) / 1e4;  // the worker's time on it
    const CaseEvidence evidence{prefix + spec.id,
                                ev.guards_intact.value_or(true),
                                ev.inputs_intact.value_or(true),
                                oc,
                                ev.counters_zero.value_or(true),
                                ev.workspace_repeat_same.value_or(true)};
    if (auto v = case_verdict(evidence)) {
      j.pass = false;  // the output's own failure already says so; any other evidence too
      record_failure(found.verdict, v->outcome, v->reason);
    }
    if (!ev.out.empty()) fs::remove(ev.out);
    return j;
  }

  bool reject(WorkerClient& worker, const std::string& why) {
    worker.reject(why);
    return false;
  }

  const EvalEnv& env_;
  const Candidate& c_;
  const GpuJob& g_;
  Record& rec_;
  const ProgressFn& progress_;
};

// A would-be elite under compute-sanitizer (evo run --sanitize): a report keeps it out.
double sanitize_would_be_elite(Record& rec, const EvalEnv& env, const Candidate& c, const CompileResult& compiled,
                               const EvalPlan& plan, const EliteStanding& standing, const ProgressFn& progress) {
  if (env.compute_sanitizer.empty() || !rec.fitness ||
      !standing.would_enter(rec.fitness->geomean_median_us.value_or(0)))
    return 0;
  SanitizerResult san = run_sanitizer(env, c, compiled, plan, progress);
  rec.gates->sanitizer = std::move(san.report);
  rec.phases->sanitizer_s = san.seconds;
  if (san.verdict) {
    rec.outcome = san.verdict->outcome;
    rec.reason = san.verdict->reason;
    rec.fitness.reset();  // written as the head's null
  }
  return san.seconds;
}

// The deep tier for a would-be elite (gates.json deep_gate.enabled): its cases in a second worker
// job on the same compiled kernel, no timing, after the first job proved it correct and fast
// enough for a top 3. A failure keeps it out; the reason says "deep gate:". The deep tier cost
// fast stage-7 elites 10.6-27.5 s of device checks on the H200, so only candidates about to enter
// a top 3 (or replace one of its entries) pay it.
double deep_gate_would_be_elite(Record& rec, const EvalEnv& env, const Candidate& c, const CompileResult& compiled,
                                const EvalPlan& plan, const EliteStanding& standing, const fs::path& work,
                                const ProgressFn& progress) {
  if (plan.deep_cases.empty() || rec.outcome != Outcome::ok || !rec.fitness ||
      !standing.would_enter(rec.fitness->geomean_median_us.value_or(0)))
    return 0;
  // What ships keeps nothing between calls and reads no clock (compile/call_state.h): read from
  // its SASS first, as no case can see a bomb set past every launch a gate makes (hacker round 6).
  const CallStateCheck state = check_call_state(compiled.cubin_path);
  if (!state.checked)
    throw environment_error(
        fmt::format("deep gate: {} (a would-be elite's SASS is read for state kept between calls)", state.error));
  if (state.state) {
    rec.outcome = Outcome::integrity;
    rec.reason = "deep gate: " + *state.state;
    rec.fitness.reset();
    return 0;
  }
  EvalPlan deep = plan;
  deep.gate_cases = plan.deep_cases;
  deep.bench.clear();
  deep.sanitize_cases.clear();
  const GpuJob job = prepare_job(env, c, compiled, deep, standing, work);
  // No benchmark shapes: a timing event would be foreign to the job and rejected before it could
  // touch the record.
  GpuEvaluation evaluation(env, c, job, rec, progress);
  WorkerClient worker(job.job, work, plan.limits.value_or(env.gates->limits));
  progress(fmt::format("deep gate: {} cases", plan.deep_cases.size()));
  evaluation.drive(worker);
  const std::optional<Verdict> verdict = settle_verdict(evaluation.found.verdict, worker.failure(), 0, 0);
  RecordGate gate;
  gate.pass = !evaluation.found.checks.empty() && !verdict;
  gate.checks = evaluation.found.checks;
  if (evaluation.found.stopped_at_first_failure) gate.extra["stopped_at_first_failure"] = true;
  rec.gates->deep = std::move(gate);
  rec.phases->deep_gate_s = worker.seconds();
  if (verdict) {
    rec.outcome = verdict->outcome;
    rec.reason = "deep gate: " + verdict->reason;
    rec.fitness.reset();  // written as the head's null
  } else if (evaluation.found.checks.size() < plan.deep_cases.size()) {
    // Fewer checks than cases and no verdict: the tier did not run in full, so it proves nothing.
    rec.outcome = Outcome::crash;
    rec.reason = fmt::format("deep gate: {} of {} cases checked, no verdict", evaluation.found.checks.size(),
                             plan.deep_cases.size());
    rec.fitness.reset();
  }
  return worker.seconds();
}

}  // namespace

Record evaluate_candidate(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                          const EliteStanding& standing, const std::string& origin, const ProgressFn& progress) {
  Record rec = run_record_head(env, c, compiled, plan, origin);
  if (!compiled.verdict.ok()) {
    rec.outcome = compiled.verdict.outcome;
    rec.reason = compiled.verdict.reason;
    return rec;
  }
  const fs::path work = env.work_root / c.id();
  fs::create_directories(work);
  const GpuJob job = prepare_job(env, c, compiled, plan, standing, work);
  GpuEvaluation evaluation(env, c, job, rec, progress);
  WorkerClient worker(job.job, work, plan.limits.value_or(env.gates->limits));
  evaluation.drive(worker);
  const double worker_s = worker.seconds();
  settle_record(rec, evaluation.found, worker.failure(), plan.bench.size());
  rec.gates->sampled = sampled_summary(plan, evaluation.found.checks);
  if (!rec.gates->sampled) rec.gates->extra["sampled"] = nullptr;
  if (plan.gate_seed)
    rec.gate_seed = *plan.gate_seed;
  else
    rec.extra["gate_seed"] = nullptr;
  add_fitness(rec, plan.bench.size());
  const double deep_s = deep_gate_would_be_elite(rec, env, c, compiled, plan, standing, work, progress);
  std::error_code ec;
  fs::remove_all(work, ec);
  const double sanitizer_s = sanitize_would_be_elite(rec, env, c, compiled, plan, standing, progress);
  rec.gpu_seconds = worker_s + deep_s + sanitizer_s;
  rec.phases->gpu_s = worker_s;
  rec.phases->detail = evaluation.phases.detail();
  return rec;
}

}  // namespace evo
