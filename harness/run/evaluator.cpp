#include "run/evaluator.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <map>

#include "core/errors.h"
#include "core/paths.h"
#include "gates/correctness.h"
#include "run/sanitizer.h"
#include "run/worker_client.h"
#include "store/population.h"
#include "store/record.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The first failure decides the verdict; later ones are still recorded in the checks.
void fail(std::optional<Verdict>& v, Outcome o, const std::string& reason) {
  if (!v) v = Verdict{o, reason};
}

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

json evaluate_candidate(const EvalEnv& env, const Candidate& c, const CompileResult& compiled, const EvalPlan& plan,
                        const EliteStanding& standing, const std::string& origin, const ProgressFn& progress) {
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
  if (!compiled.verdict.ok()) {
    rec["outcome"] = std::string(to_string(compiled.verdict.outcome));
    rec["reason"] = compiled.verdict.reason;
    return rec;
  }

  const fs::path work = env.work_root / c.id();
  fs::create_directories(work);
  WorkerJob job = candidate_job(env, c, compiled, "candidate");
  job.prune_us = standing.prune_us;
  std::map<std::string, std::pair<CaseSpec, std::string>> refs;  // case id -> spec, reference path
  int k = 0;
  for (CaseSpec cs : plan.gate_cases) {
    refs[cs.id] = {cs, env.references->path_for(c.task, cs).string()};
    cs.out_path = (work / fmt::format("gate{}.out", k++)).string();
    job.cases.push_back(cs);
  }
  std::map<std::string, BenchSpec> bench_by_id;
  for (BenchSpec b : plan.bench) {
    b.fresh.out_path = (work / fmt::format("post{}.out", k++)).string();
    refs[b.fresh.id] = {b.fresh, env.references->path_for(c.task, b.fresh).string()};
    bench_by_id[b.id] = b;
    job.bench.push_back(b);
  }

  std::optional<Verdict> verdict;
  json checks = json::array(), post = json::array();
  bool deterministic = true;
  const Tolerance& tol = env.gates->tolerance(c.task);
  auto check_case = [&](const json& ev, const CaseSpec& spec, const std::string& ref_path, const std::string& prefix) {
    OutputCheck oc = check_output(read_file(ev["out"].get<std::string>()), read_file(ref_path), c.task.dtype, tol);
    json j = check_json(oc);
    j["case"] = spec.id;
    j["shape"] = spec.shape.dims();
    j["seed"] = spec.seed;
    j["inputs"] = spec.inputs;
    j["inputs_intact"] = ev.value("inputs_intact", true);
    j["guards_intact"] = ev.value("guards_intact", true);
    if (ev.contains("deterministic")) j["deterministic"] = ev["deterministic"];
    const std::string where = prefix + spec.id;
    if (!j["guards_intact"].get<bool>()) {
      j["pass"] = false;
      fail(verdict, Outcome::correctness, where + ": wrote outside its buffers (guard bytes changed)");
    } else if (!j["inputs_intact"].get<bool>()) {
      j["pass"] = false;
      fail(verdict, Outcome::correctness, where + ": modified its inputs");
    } else if (!oc.pass) {
      fail(verdict, Outcome::correctness, where + ": " + oc.reason);
    }
    fs::remove(ev["out"].get<std::string>());
    return j;
  };

  WorkerClient worker(job, work, env.gates->limits);
  while (auto ev = worker.next()) {
    const std::string e = (*ev)["event"];
    if (e == "phase") {
      const std::string what = (*ev).contains("case") ? (*ev)["case"].get<std::string>() : (*ev).value("bench", "");
      progress((*ev)["phase"].get<std::string>() + (what.empty() ? "" : " " + what));
    } else if (e == "case_done") {
      const auto& [spec, ref_path] = refs.at((*ev)["case"].get<std::string>());
      checks.push_back(check_case(*ev, spec, ref_path, ""));
      if (!(*ev).value("deterministic", true)) deterministic = false;
    } else if (e == "await") {
      if (!verdict && !deterministic) fail(verdict, Outcome::nondeterministic, "two runs on the same inputs differ bitwise");
      worker.send(verdict ? "stop" : "continue");
      if (verdict) break;
    } else if (e == "timing") {
      const BenchSpec& b = bench_by_id.at((*ev)["bench"].get<std::string>());
      if ((*ev).contains("stats")) {
        json t = timing_entry(*ev, b.timed.shape, c.task);
        const auto before = t["sm_clock_before_mhz"], after = t["sm_clock_after_mhz"];
        if (before.is_number() && after.is_number() && after.get<double>() < 0.9 * before.get<double>())
          rec["warnings"].push_back(fmt::format("SM clock fell from {} to {} MHz during {}", before.get<int>(),
                                                after.get<int>(), b.id));
        if (t.contains("rse") && t["rse"].is_number() && t["rse"].get<double>() > 0.02)
          rec["warnings"].push_back(fmt::format("noisy timing on {}: rse {:.1f} %", b.id, 100 * t["rse"].get<double>()));
        rec["timing"].push_back(t);
      }
      if ((*ev).value("pruned", false)) rec["pruned"] = true;
    } else if (e == "post_done") {
      const BenchSpec& b = bench_by_id.at((*ev)["bench"].get<std::string>());
      json j = check_case(*ev, b.fresh, refs.at(b.fresh.id).second, "after timing, fresh inputs ");
      j["us"] = (*ev)["us"];
      // The fresh launch runs under the same conditions as a timed sample (L2 flushed, events).
      // Far slower means the timed samples were not doing the work: a result cache or replay.
      for (const auto& t : rec["timing"])
        if (t["shape"].get<std::string>() == b.timed.shape.dims() && t.contains("p90_us") && t["p90_us"].is_number()) {
          const double p90 = t["p90_us"], fresh = (*ev)["us"];
          if (fresh > 3.0 * p90 + 20.0) {
            j["pass"] = false;
            fail(verdict, Outcome::correctness,
                 fmt::format("after timing, fresh inputs on {} took {:.1f} µs against a timed p90 of {:.1f} µs: "
                             "the timed launches did not do the work (result cache or replay)", b.id, fresh, p90));
          }
        }
      post.push_back(j);
    } else if (e == "error" && (*ev).value("outcome", "") == "environment") {
      throw environment_error((*ev).value("reason", "worker could not reach the GPU"));
    }
  }
  if (worker.failure()) {
    // A crash or timeout outranks what the gate saw before it.
    verdict = worker.failure();
  }
  std::error_code ec;
  fs::remove_all(work, ec);

  const double worker_s = worker.seconds();
  double gpu_s = worker_s;
  bool gate_pass = !verdict || (verdict->outcome != Outcome::correctness && verdict->outcome != Outcome::nondeterministic);
  rec["gates"]["correctness"] = {{"pass", !checks.empty() && gate_pass}, {"checks", checks}};
  rec["gates"]["determinism"] = {{"pass", deterministic}};
  rec["gates"]["post_timing"] = {{"pass", !post.empty() && gate_pass}, {"checks", post}};
  if (!verdict && post.size() != plan.bench.size())
    verdict = Verdict{Outcome::runtime, "worker ended before every benchmark shape was checked"};
  rec["outcome"] = std::string(to_string(verdict ? verdict->outcome : Outcome::ok));
  rec["reason"] = verdict ? verdict->reason : "";

  if (!verdict && !rec["pruned"].get<bool>() && rec["timing"].size() == plan.bench.size()) {
    double log_med = 0, log_p90 = 0;
    for (const auto& t : rec["timing"]) {
      log_med += std::log(t["median_us"].get<double>());
      log_p90 += std::log(t["p90_us"].get<double>());
    }
    const double n = double(rec["timing"].size());
    rec["fitness"] = {{"geomean_median_us", std::exp(log_med / n)}, {"geomean_p90_us", std::exp(log_p90 / n)},
                      {"shapes", rec["timing"].size()}, {"complete", true}};
  }

  // A would-be elite under compute-sanitizer (evo run --sanitize): a report keeps it out.
  if (!env.compute_sanitizer.empty() && rec["fitness"].is_object() &&
      standing.would_enter(rec["fitness"]["geomean_median_us"].get<double>())) {
    SanitizerResult san = run_sanitizer(env, c, compiled, plan, progress);
    rec["gates"]["sanitizer"] = san.report;
    rec["phases"]["sanitizer_s"] = san.seconds;
    gpu_s += san.seconds;
    if (san.verdict) {
      rec["outcome"] = std::string(to_string(san.verdict->outcome));
      rec["reason"] = san.verdict->reason;
      rec["fitness"] = nullptr;
    }
  }
  rec["gpu_seconds"] = gpu_s;
  rec["phases"]["gpu_s"] = worker_s;
  return rec;
}

}  // namespace evo
