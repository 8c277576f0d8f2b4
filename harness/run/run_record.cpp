#include "run/run_record.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cmath>

#include "compile/compile_record.h"
#include "core/version.h"
#include "gates/correctness.h"
#include "gates/verdict.h"
#include "run/sampler.h"
#include "store/record.h"

namespace evo {

using nlohmann::json;

Record run_record_head(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                       const std::string& origin) {
  Record r = candidate_record(c);
  r.kind = "run";
  r.run_id = env.run_id;
  r.time = utc_now_iso8601();
  r.origin = origin;
  r.benchmark = plan.benchmark;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  RecordEnv e;
  e.gpu = env.gpu.name;
  e.gpu_key = env.gpu.key;
  e.cc = env.gpu.cc;
  e.sms = env.gpu.sms;
  e.driver = env.gpu.driver;
  e.nvrtc = env.nvrtc_version;
  e.evo = evo_version();
  e.host = host;
  r.env = std::move(e);
  r.compile = compile_part(compiled);
  r.gates = RecordGates{};
  r.gates->resources = resource_gate_part(compiled.verdict);
  r.gates->extra["sanitizer"] = nullptr;  // its report, when `evo run --sanitize` ran it
  r.timing = std::vector<TimingEntry>{};
  r.extra["fitness"] = nullptr;  // until add_fitness
  r.pruned = false;
  r.warnings = std::vector<std::string>{};
  r.gpu_seconds = 0.0;
  r.phases = RecordPhases{};
  r.phases->compile_s = compiled.seconds;
  r.phases->gpu_s = 0.0;
  return r;
}

TimingEntry run_timing_entry(const json& ev, const Shape& s, const Task& task) {
  TimingEntry t = read_timing_entry(ev.contains("stats") ? ev["stats"] : json::object());
  t.shape = s.dims();
  t.set = s.set;
  if (t.median_us && *t.median_us > 0) {
    t.tflops = s.flops(task.causal) / *t.median_us / 1e6;
    t.extra["gbps"] = s.min_bytes(2) / *t.median_us / 1e3;
  }
  for (const char* k : {"back_to_back_us", "graph_us", "sm_clock_before_mhz", "sm_clock_after_mhz", "warmup_launches"})
    t.extra[k] = ev.contains(k) ? ev[k] : json(nullptr);
  return t;
}

SampleStats timing_stats(const TimingEntry& t) {
  SampleStats s;
  s.median = t.median_us.value_or(0);
  s.p10 = t.p10_us.value_or(0);
  s.p90 = t.p90_us.value_or(0);
  s.n = int(t.n.value_or(0));
  const json min = t.extra.value("min_us", json());
  s.min = min.is_number() ? min.get<double>() : s.p10;
  return s;
}

TimingIntegrity timing_integrity_part(const TimingEvidence& e, const TimingJudgement& j, const GatesConfig& gates,
                                      const Task& task) {
  const TimingFacts& f = e.facts;
  TimingIntegrity t;
  t.fresh_inputs = true;  // the loop draws a new counter for every sample (gpu/timing_loop.cpp)
  t.samples_verified = f.samples;
  t.rows_per_sample = f.rows_per_sample;
  t.rows_checked = (long long)f.rows_checked;
  t.extra["warm_up_verified"] = f.warm_up_verified;  // warm-up launches drawn and checked (gpu/launch_draws.h)
  t.rows_max_abs = f.rows.max_abs;
  t.rows_rel_l2 = j.rows_rel_l2;
  std::vector<TimedFullCheck> full;
  for (const FullCheck& c : f.full) {
    const OutputCheck oc = check_counts(c.facts, gates.tolerance(task, c.inputs), e.shape);
    TimedFullCheck tc;
    tc.sample = c.sample + 1;
    tc.why = c.why;
    tc.inputs = c.inputs;
    tc.max_abs = oc.max_abs;
    if (std::isfinite(oc.rel_l2)) tc.rel_l2 = oc.rel_l2;
    tc.pass = oc.pass && c.inputs_intact;
    full.push_back(std::move(tc));
  }
  t.full_checks = std::move(full);
  if (j.probes) {
    RepeatProbes p;
    p.n = j.probes->n;
    p.fresh_median_us = j.probes->fresh_median_us;
    p.repeat_median_us = j.probes->repeat_median_us;
    p.gain_us = j.probes->gain_us;
    p.limit_us = j.probes->limit_us;
    p.pass = j.probes->pass();
    t.repeat_probes = std::move(p);
  }
  t.floor_us = e.floor_us;
  if (!e.floor_us) t.extra["floor_us"] = nullptr;  // no peaks for this GPU in gates.json
  t.inputs_intact = f.inputs_intact;
  t.guards_intact = f.guards_intact;
  t.pass = !j.verdict;
  if (f.failure)
    t.failure = fmt::format("sample {} of {}: {}", f.failure->sample + 1, f.samples, f.failure->what);
  else
    t.extra["failure"] = nullptr;
  return t;
}

void settle_record(Record& rec, const GateFindings& found, const std::optional<Verdict>& worker_failure,
                   size_t bench_shapes) {
  const std::optional<Verdict> verdict = settle_verdict(found.verdict, worker_failure, found.post.size(), bench_shapes);
  const bool gate_pass = correctness_gate_passed(verdict);
  if (!rec.gates) rec.gates = RecordGates{};
  RecordGate correctness, determinism, post_timing;
  correctness.pass = !found.checks.empty() && gate_pass;
  correctness.checks = found.checks;
  if (found.stopped_at_first_failure) correctness.extra["stopped_at_first_failure"] = true;
  determinism.pass = found.deterministic;
  post_timing.pass = !found.post.empty() && gate_pass;
  post_timing.checks = found.post;
  rec.gates->correctness = std::move(correctness);
  rec.gates->determinism = std::move(determinism);
  rec.gates->post_timing = std::move(post_timing);
  rec.outcome = verdict ? verdict->outcome : Outcome::ok;
  rec.reason = verdict ? verdict->reason : "";
}

void add_fitness(Record& rec, size_t bench_shapes) {
  if (rec.outcome != Outcome::ok || rec.pruned.value_or(false) || !rec.timing || rec.timing->size() != bench_shapes ||
      rec.timing->empty())
    return;
  double log_med = 0, log_p90 = 0;
  for (const TimingEntry& t : *rec.timing) {
    if (!t.median_us || !t.p90_us) return;  // a shape without figures: no fitness
    log_med += std::log(*t.median_us);
    log_p90 += std::log(*t.p90_us);
  }
  const double n = double(rec.timing->size());
  Fitness f;
  f.geomean_median_us = std::exp(log_med / n);
  f.geomean_p90_us = std::exp(log_p90 / n);
  f.shapes = (long long)rec.timing->size();
  f.complete = true;
  rec.fitness = std::move(f);
}

std::optional<SampledGateSummary> sampled_summary(const EvalPlan& plan, const std::vector<GateCheck>& checks) {
  if (!plan.gate_seed) return std::nullopt;
  SampledGateSummary s;
  s.seed = *plan.gate_seed;
  s.cases = (long long)plan.sampled_cases;
  s.run = 0;
  s.passed = 0;
  for (const GateCheck& ch : checks)
    if (is_sampled_case(ch.case_id.value_or(""))) {
      ++*s.run;
      if (ch.pass.value_or(false) && ch.deterministic.value_or(true)) ++*s.passed;
    }
  return s;
}

}  // namespace evo
