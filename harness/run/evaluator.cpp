#include "run/evaluator.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <map>

#include "core/errors.h"
#include "core/paths.h"
#include "gates/correctness.h"
#include "gates/verdict.h"
#include "run/eval_phases.h"
#include "run/job_events.h"
#include "run/sampler.h"
#include "run/sanitizer.h"
#include "run/worker_client.h"
#include "store/population.h"
#include "compile/compile_record.h"
#include "store/record.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json timing_entry(const json& ev, const Shape& s, const Task& task) {
  json t = ev.contains("stats") ? ev["stats"] : json::object();
  t["shape"] = s.dims();
  t["set"] = s.set;
  if (t.contains("median_us") && t["median_us"].get<double>() > 0) {
    const double us = t["median_us"];
    t["tflops"] = s.flops(task.causal) / us / 1e6;
    t["gbps"] = s.min_bytes(2) / us / 1e3;
  }
  for (const char* k : {"back_to_back_us", "graph_us", "sm_clock_before_mhz", "sm_clock_after_mhz", "warmup_launches"})
    t[k] = ev.contains(k) ? ev[k] : json(nullptr);
  return t;
}

}  // namespace

WorkerJob candidate_job(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const std::string& mode) {
  WorkerJob job;
  job.mode = mode;
  job.device = env.device;
  job.task = c.task;
  job.support_cubin = env.support_cubin.string();
  job.cubin = compiled.cubin_path.string();
  job.launch = *compiled.launch;
  job.timing = env.gates->timing;
  return job;
}

EliteStanding elite_standing(const json& population, int stage, const std::string& candidate_id) {
  EliteStanding s;
  const auto elites = stage_elites(population, stage);
  if (!elites.empty() && !elites.front()["timing"].empty()) s.prune_us = elites.front()["timing"][0]["median_us"].get<double>();
  if (elites.size() >= size_t(kElites)) s.entry_us = elites[size_t(kElites) - 1]["fitness"]["geomean_median_us"].get<double>();
  for (const auto& e : elites)
    if (e.contains("candidate_id") && e["candidate_id"] == candidate_id) s.is_elite = true;
  return s;
}

namespace {

// The record's parts known before any GPU work: the candidate, the run, the machine, the compile.
json record_head(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                 const std::string& origin) {
  json rec = candidate_json(c);
  rec["schema_version"] = kRecordSchemaVersion;
  rec["kind"] = "run";
  rec["run_id"] = env.run_id;
  rec["time"] = utc_now_iso8601();
  rec["origin"] = origin;
  rec["benchmark"] = plan.benchmark;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  rec["env"] = {{"gpu", env.gpu.name}, {"gpu_key", env.gpu.key}, {"cc", env.gpu.cc},     {"sms", env.gpu.sms},
                {"driver", env.gpu.driver}, {"nvrtc", env.nvrtc_version}, {"evo", "0.1.0"}, {"host", host}};
  rec["compile"] = compile_json(compiled);
  rec["gates"] = {{"resources", resource_gate_json(compiled.verdict)}, {"sanitizer", nullptr}};
  rec["timing"] = json::array();
  rec["fitness"] = nullptr;
  rec["pruned"] = false;
  rec["warnings"] = json::array();
  rec["gpu_seconds"] = 0.0;
  rec["phases"] = {{"compile_s", compiled.seconds}, {"gpu_s", 0.0}};
  return rec;
}

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
  int k = 0;
  for (CaseSpec cs : plan.gate_cases) {
    g.refs[cs.id] = {cs, env.references->path_for(c.task, cs).string()};
    cs.out_path = (work / fmt::format("gate{}.out", k++)).string();
    g.job.cases.push_back(cs);
  }
  for (BenchSpec b : plan.bench) {
    b.fresh.out_path = (work / fmt::format("post{}.out", k++)).string();
    g.refs[b.fresh.id] = {b.fresh, env.references->path_for(c.task, b.fresh).string()};
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
  GpuEvaluation(const EvalEnv& env, const Candidate& c, const GpuJob& g, json& rec, const ProgressFn& progress)
      : env_(env), c_(c), g_(g), rec_(rec), progress_(progress) {}

  void drive(WorkerClient& worker) {
    while (auto ev = worker.next_event()) {
      if (!handle(*ev, worker)) break;
    }
  }

  std::optional<Verdict> verdict;
  EvalPhases phases;
  json checks = json::array(), post = json::array();
  bool deterministic = true;
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
    checks.push_back(check_case(ev, spec, ref_path, ""));
    if (!ev.deterministic.value_or(true) && deterministic) {
      deterministic = false;
      nondeterministic_case = spec.id;
    }
    return true;
  }

  bool on_await(WorkerClient& worker) {
    if (!verdict) {
      verdict = determinism_verdict(deterministic);
      if (verdict) verdict->reason = nondeterministic_case + ": " + verdict->reason;  // names the case (and its dimensions)
    }
    worker.send(verdict ? "stop" : "continue");
    return !verdict;
  }

  bool on_timing(const WorkerEvent& ev, WorkerClient& worker) {
    if (auto why = foreign_event(g_.job, ev)) return reject(worker, *why);
    const BenchSpec& b = g_.bench_by_id.at(ev.bench);
    if (ev.fields.contains("stats")) {
      json t = timing_entry(ev.fields, b.timed.shape, c_.task);
      const VerdictPolicy& policy = env_.gates->verdict;
      const auto before = t["sm_clock_before_mhz"], after = t["sm_clock_after_mhz"];
      if (before.is_number() && after.is_number())
        if (auto w = clock_drop_warning(b.id, before.get<double>(), after.get<double>(), policy)) rec_["warnings"].push_back(*w);
      if (t.contains("rse") && t["rse"].is_number())
        if (auto w = noisy_timing_warning(b.id, t["rse"].get<double>(), policy)) rec_["warnings"].push_back(*w);
      rec_["timing"].push_back(t);
    }
    if (ev.pruned) rec_["pruned"] = true;
    return true;
  }

  bool on_post_done(const WorkerEvent& ev, WorkerClient& worker) {
    if (auto why = foreign_event(g_.job, ev)) return reject(worker, *why);
    const BenchSpec& b = g_.bench_by_id.at(ev.bench);
    json j = check_case(ev, b.fresh, g_.refs.at(b.fresh.id).second, "after timing, fresh inputs ");
    j["us"] = ev.fields["us"];
    for (const auto& t : rec_["timing"])
      if (t["shape"].get<std::string>() == b.timed.shape.dims() && t.contains("p90_us") && t["p90_us"].is_number()) {
        if (auto v = replay_verdict(b.id, *ev.us, t["p90_us"].get<double>(), env_.gates->verdict)) {
          j["pass"] = false;
          record_failure(verdict, v->outcome, v->reason);
        }
      }
    post.push_back(j);
    return true;
  }

  json check_case(const WorkerEvent& ev, const CaseSpec& spec, const std::string& ref_path, const std::string& prefix) {
    const Tolerance& tol = env_.gates->tolerance(c_.task, spec.inputs);  // per input distribution
    OutputCheck oc = ev.device_check ? check_counts(*ev.device_check, tol, spec.shape)
                                     : phases.check(ev.out, ref_path, c_.task.dtype, tol);
    json j = check_json(oc);
    if (ev.device_check) j["device_check"] = to_json(*ev.device_check);  // its seconds and device memory
    j["case"] = spec.id;
    j["shape"] = spec.shape.dims();
    j["seed"] = spec.seed;
    j["inputs"] = spec.inputs;
    j["inputs_intact"] = ev.inputs_intact.value_or(true);
    j["guards_intact"] = ev.guards_intact.value_or(true);
    if (ev.deterministic) j["deterministic"] = *ev.deterministic;
    const CaseEvidence evidence{prefix + spec.id, ev.guards_intact.value_or(true), ev.inputs_intact.value_or(true), oc};
    if (auto v = case_verdict(evidence)) {
      if (!evidence.guards_intact || !evidence.inputs_intact) j["pass"] = false;
      record_failure(verdict, v->outcome, v->reason);
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
  json& rec_;
  const ProgressFn& progress_;
};

// The gates' entries in the record, and the verdict once the worker has ended.
void settle(json& rec, const GpuEvaluation& e, const std::optional<Verdict>& worker_failure, size_t bench_shapes) {
  const std::optional<Verdict> verdict = settle_verdict(e.verdict, worker_failure, e.post.size(), bench_shapes);
  const bool gate_pass = correctness_gate_passed(verdict);
  rec["gates"]["correctness"] = {{"pass", !e.checks.empty() && gate_pass}, {"checks", e.checks}};
  rec["gates"]["determinism"] = {{"pass", e.deterministic}};
  rec["gates"]["post_timing"] = {{"pass", !e.post.empty() && gate_pass}, {"checks", e.post}};
  rec["outcome"] = std::string(to_string(verdict ? verdict->outcome : Outcome::ok));
  rec["reason"] = verdict ? verdict->reason : "";
}

// Fitness: geometric mean over the benchmark shapes of the median (and of p90, for ties), only
// for a candidate that passed, was not pruned and was timed on every shape.
void add_fitness(json& rec, size_t bench_shapes) {
  if (rec["outcome"] != "ok" || rec["pruned"].get<bool>() || rec["timing"].size() != bench_shapes) return;
  double log_med = 0, log_p90 = 0;
  for (const auto& t : rec["timing"]) {
    log_med += std::log(t["median_us"].get<double>());
    log_p90 += std::log(t["p90_us"].get<double>());
  }
  const double n = double(rec["timing"].size());
  rec["fitness"] = {{"geomean_median_us", std::exp(log_med / n)}, {"geomean_p90_us", std::exp(log_p90 / n)},
                    {"shapes", rec["timing"].size()}, {"complete", true}};
}

// The sampled gate cases of a record: the seed that drew them, how many, how many passed.
json sampled_summary(const EvalPlan& plan, const json& checks) {
  if (!plan.gate_seed) return nullptr;
  size_t run = 0, passed = 0;
  for (const auto& ch : checks)
    if (is_sampled_case(ch.value("case", ""))) {
      ++run;
      if (ch.value("pass", false) && ch.value("deterministic", true)) ++passed;
    }
  return {{"seed", *plan.gate_seed}, {"cases", plan.sampled_cases}, {"run", run}, {"passed", passed}};
}

// A would-be elite under compute-sanitizer (evo run --sanitize): a report keeps it out.
double sanitize_would_be_elite(json& rec, const EvalEnv& env, const Candidate& c, const CompileResult& compiled,
                               const EvalPlan& plan, const EliteStanding& standing, const ProgressFn& progress) {
  if (env.compute_sanitizer.empty() || !rec["fitness"].is_object() ||
      !standing.would_enter(rec["fitness"]["geomean_median_us"].get<double>()))
    return 0;
  SanitizerResult san = run_sanitizer(env, c, compiled, plan, progress);
  rec["gates"]["sanitizer"] = san.report;
  rec["phases"]["sanitizer_s"] = san.seconds;
  if (san.verdict) {
    rec["outcome"] = std::string(to_string(san.verdict->outcome));
    rec["reason"] = san.verdict->reason;
    rec["fitness"] = nullptr;
  }
  return san.seconds;
}

}  // namespace

json evaluate_candidate(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                        const EliteStanding& standing, const std::string& origin, const ProgressFn& progress) {
  json rec = record_head(env, c, compiled, plan, origin);
  if (!compiled.verdict.ok()) {
    rec["outcome"] = std::string(to_string(compiled.verdict.outcome));
    rec["reason"] = compiled.verdict.reason;
    return rec;
  }
  const fs::path work = env.work_root / c.id();
  fs::create_directories(work);
  const GpuJob job = prepare_job(env, c, compiled, plan, standing, work);
  GpuEvaluation evaluation(env, c, job, rec, progress);
  WorkerClient worker(job.job, work, env.gates->limits);
  evaluation.drive(worker);
  std::error_code ec;
  fs::remove_all(work, ec);
  const double worker_s = worker.seconds();
  settle(rec, evaluation, worker.failure(), plan.bench.size());
  rec["gates"]["sampled"] = sampled_summary(plan, evaluation.checks);
  rec["gate_seed"] = plan.gate_seed ? json(*plan.gate_seed) : json(nullptr);
  add_fitness(rec, plan.bench.size());
  const double sanitizer_s = sanitize_would_be_elite(rec, env, c, compiled, plan, standing, progress);
  rec["gpu_seconds"] = worker_s + sanitizer_s;
  rec["phases"]["gpu_s"] = worker_s;
  rec["phases"]["detail"] = evaluation.phases.to_json();
  return rec;
}

}  // namespace evo
