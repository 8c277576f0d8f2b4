#include "evolve/loop.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <optional>

#include "compile/compile_set.h"
#include "run/context.h"
#include "core/errors.h"
#include "core/paths.h"
#include "evolve/admission.h"
#include "evolve/generator.h"
#include "evolve/novelty.h"
#include "evolve/request.h"
#include "evolve/source_store.h"
#include "run/progress.h"
#include "run/session.h"
#include "store/atomic_file.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "compile/compile_record.h"
#include "store/record.h"
#include "run/sampler.h"
#include "store/records.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Loop {
  const EvolveOptions& o;
  Context ctx = Context::load();
  const Stage& stage = find_stage(ctx.stages, o.stage);
  Task task = parse_task(o.task);
  fs::path cache = o.cache_dir.empty() ? default_cache_dir() : fs::path(o.cache_dir);
  Compiler compiler{ctx.root, cache, ctx.gates};
  // The full evaluation draws the sampled gate cases with a seed chosen now (stored in every record).
  EvalPlan full =
      make_plan(ctx.gates, {task, ctx.gates.gate_sets, ctx.gates.benchmark_sets, ctx.gates.seeds, false, draw_gate_seed()});
  EvalPlan quick = make_plan(ctx.gates, quick_plan_request(ctx.gates, task));
  std::unique_ptr<Session> session;
  std::string no_gpu, arch = "sm_90a", run_id;
  fs::path trace;
  NoveltyFilter novelty{ctx.root, task.name()};
  std::vector<std::unique_ptr<Variant>> external;  // variants made from generated sources
  std::vector<json> feedback;                      // failures that are not records
  std::vector<json> mine;                          // this run's records (resumed ones too)
  std::optional<TunableGenerator> tunable;
  json annotation;
  std::string last_log;
  double gpu_s = 0, best = 0, best_quick = 0;
  size_t evaluated = 0;
  int first_generation = 0;

  explicit Loop(const EvolveOptions& opts) : o(opts) {}
  void setup();
  void resume(const std::vector<json>& records);
  std::vector<Individual> parents() const;
  std::vector<Proposal> propose(int gen, json& step);
  std::optional<Candidate> candidate_of(const Proposal& p, json& verdict);
  json evaluate(const Candidate& c, const CompileResult& compiled, const EvalPlan& plan);
  std::optional<Candidate> admit_proposal(const Proposal& p, json& verdict);
  json one(const Proposal& p, const Candidate* c, const CompileResult& compiled, int gen, json verdict);
  void generation(int gen, Progress& progress);
  std::string summary() const;
};

void Loop::setup() {
  if (o.population == 0 || o.generations < 1) throw usage_error("--population and --generations must be at least 1");
  if (!valid_operator(o.op)) throw usage_error("--operator " + o.op + ": use free, insight or full");
  const bool exec = o.generator.rfind("exec:", 0) == 0;
  if (!exec && o.generator != "builtin" && o.generator != "random")
    throw usage_error("--generator " + o.generator + ": use builtin, random or exec:COMMAND");
  if (exec && o.generator.size() == 5) throw usage_error("--generator exec: needs a command after the colon");
  ensure_writable_dir(cache, "cache dir");
  ensure_writable_dir(o.results_dir, "results dir");
  ensure_writable_dir(o.populations_dir, "populations dir");
  if (!exec) tunable.emplace(search_space(ctx.root, stage, task), o.generator == "random", o.rng_seed);
  run_id = o.resume.empty() ? fmt::format("ev-{}-{}", utc_now_compact(), o.rng_seed) : o.resume;
  if (run_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != std::string::npos)
    throw usage_error("--resume " + run_id + ": a run id has letters, digits, '-', '_' and '.' only");
  fs::create_directories(fs::path(o.results_dir) / "evolve");
  trace = fs::path(o.results_dir) / "evolve" / (run_id + ".trace.jsonl");
  SessionOptions so{o.results_dir, o.populations_dir, cache, o.device, "evolve-" + run_id, {}, true, {}, {}};
  auto annotate = [this](json& rec) {
    rec["origin"] = "evolve";
    rec["evolve"] = annotation;
    if (rec["outcome"] == "compile" && !last_log.empty()) rec["compile"]["log"] = last_log.substr(0, 4096);
    if (rec["fitness"].is_object() && annotation.value("phase", "") == "full") {
      const Admission a = admit(rec["fitness"], stage_elites(session->population(task, full.benchmark), stage.number), kElites);
      rec["evolve"]["admission"] = a.decision;
      rec["evolve"]["admission_spread"] = a.spread;
      if (!a.against.empty()) rec["evolve"]["compared_with"] = a.against;
    }
  };
  try {
    session = std::make_unique<Session>(ctx, compiler, so);
    session->set_annotate(annotate);
    arch = session->gpu().cc >= 90 ? "sm_90a" : fmt::format("sm_{}", session->gpu().cc);
  } catch (const EvoError& e) {
    if (e.code() != kExitEnvironment) throw;
    no_gpu = e.what();
  }
  RecordSet all = read_records(o.results_dir);
  novelty.add_records(all.records);
  if (!o.resume.empty()) resume(all.records);
}

void Loop::resume(const std::vector<json>& records) {
  for (const auto& r : records)
    if (string_or(object_or_null(r, "evolve"), "run") == run_id) mine.push_back(r);
  if (mine.empty()) throw usage_error("--resume " + run_id + ": no record of that run under " + o.results_dir);
  for (const auto& r : mine) {
    const json ev = r["evolve"];
    first_generation = std::max(first_generation, ev.value("generation", 0) + 1);
    gpu_s += number_or(r, "gpu_seconds", 0);
    // One evaluation per candidate that reached the GPU: its screen, or its full run unscreened.
    const std::string out = string_or(r, "outcome");
    const bool compiled = out != "constraints" && out != "compile" && out != "resources" && out != "unsupported";
    if (compiled && (ev.value("phase", "") == "screen" || !o.quick)) ++evaluated;
    const double f = number_or(object_or_null(r, "fitness"), "geomean_median_us", 0);
    double& slot = ev.value("phase", "") == "full" ? best : best_quick;
    if (f > 0 && (slot == 0 || f < slot)) slot = f;
  }
}

std::vector<Individual> Loop::parents() const {
  std::vector<json> ranked;
  if (session) ranked = stage_elites(session->population(task, full.benchmark), stage.number);
  std::vector<json> own;
  for (const auto& r : mine)
    if (object_or_null(r, "fitness").is_object() && string_or(object_or_null(r, "evolve"), "phase") == "full") own.push_back(r);
  std::sort(own.begin(), own.end(), [](const json& a, const json& b) {
    return a["fitness"]["geomean_median_us"].get<double>() < b["fitness"]["geomean_median_us"].get<double>();
  });
  for (size_t i = 0; i < own.size() && i < o.population; ++i) ranked.push_back(own[i]);
  std::vector<Individual> out;
  for (const auto& r : ranked)
    for (const auto& v : stage.variants)
      if (v.id == string_or(r, "variant")) {
        ParamSet p;
        for (auto& [k, x] : r["params"].items()) p.emplace_back(k, x.get<long>());
        out.push_back({&v, p, string_or(r, "candidate_id"), number_or(r["fitness"], "geomean_median_us", 0)});
      }
  return out;
}

std::vector<Proposal> Loop::propose(int gen, json& step) {
  if (tunable) {
    const auto ps = parents();
    json from = json::array();
    for (const auto& p : ps) from.push_back(p.candidate_id);
    step["request"] = {{"parents", from}, {"domain_configs", tunable->domain_size()}};
    auto props = tunable->propose(ps, o.population, gen, [&](const Variant& v, const ParamSet& p) {
      return novelty.seen(Candidate{&v, p, task, arch});
    });
    json resp = json::array();
    for (const auto& p : props) resp.push_back({{"variant", p.variant->id}, {"params", Candidate{p.variant, p.params, task, arch}.params_text()},
                                                {"parent", p.parent}, {"rationale", p.rationale}});
    step["response"] = resp;
    return props;
  }
  std::vector<json> records;
  records = read_records(o.results_dir).records;
  // The newest few failures that are not records (generator errors, duplicates, compile-only runs).
  const size_t keep = std::min<size_t>(feedback.size(), 8);
  RequestInputs in{&ctx, &stage, task, session ? session->gpu().key : "", o.op, &records,
                   std::vector<json>(feedback.end() - long(keep), feedback.end()), 8};
  const json request = build_request(in);
  step["request"] = request;
  ExternalLimits lim;
  lim.timeout = std::chrono::milliseconds(long(o.generator_timeout_s) * 1000);
  lim.max_source_bytes = ctx.gates.limits.source_bytes;
  GeneratorReply reply = ask_external(o.generator.substr(5), request, lim);
  step["response"] = {{"raw", reply.raw}, {"error", reply.error}, {"rejected", reply.rejected}, {"seconds", reply.seconds}};
  auto fail = [&](const std::string& why) {
    fmt::print(stderr, "evo evolve: generation {}: {}\n", gen, why);
    feedback.push_back({{"outcome", "generator"}, {"reason", why}, {"generation", gen}});
  };
  if (!reply.error.empty()) fail(reply.error);
  for (const auto& r : reply.rejected) fail(r);
  return reply.proposals;
}

std::optional<Candidate> Loop::candidate_of(const Proposal& p, json& verdict) {
  if (p.variant) return Candidate{p.variant, p.params, task, arch};
  try {
    const fs::path stored = store_source(ctx.root, o.results_dir, p.source);
    auto v = std::make_unique<Variant>(external_variant(p.source, stage, stored, "generated source", p.parent));
    external.push_back(std::move(v));
    return Candidate{external.back().get(), default_params(*external.back()), task, arch};
  } catch (const EvoError& e) {
    verdict["outcome"] = "input";
    verdict["reason"] = e.what();
    feedback.push_back({{"outcome", "input"}, {"reason", e.what()}, {"rationale", p.rationale}});
    return std::nullopt;
  }
}

json Loop::evaluate(const Candidate& c, const CompileResult& compiled, const EvalPlan& plan) {
  const EliteStanding standing = elite_standing(session->population(task, plan.benchmark), stage.number, c.id());
  json rec = session->evaluate(c, compiled, plan, standing, "evolve", [](const std::string&) {});
  mine.push_back(rec);
  gpu_s += number_or(rec, "gpu_seconds", 0);
  return rec;
}

std::optional<Candidate> Loop::admit_proposal(const Proposal& p, json& verdict) {
  verdict = {{"parent", p.parent}, {"rationale", p.rationale}};
  auto c = candidate_of(p, verdict);
  if (!c) return std::nullopt;
  verdict["candidate_id"] = c->id();
  verdict["variant"] = c->variant->id;
  verdict["params"] = c->params_text();
  if (novelty.seen(*c)) {
    verdict["outcome"] = "duplicate";
    verdict["reason"] = "already evaluated (same normalized source and params): not compiled";
    feedback.push_back(verdict);
    return std::nullopt;
  }
  novelty.add(*c);
  return c;
}

json Loop::one(const Proposal& p, const Candidate* c, const CompileResult& compiled, int gen, json verdict) {
  last_log = compiled.log;
  annotation = {{"run", run_id}, {"generation", gen}, {"generator", o.generator.substr(0, 200)}, {"parent", p.parent},
                {"rationale", p.rationale}, {"operator", o.op}};
  if (!session || !compiled.verdict.ok()) {
    verdict["outcome"] = std::string(to_string(compiled.verdict.outcome));
    verdict["reason"] = compiled.verdict.ok() ? "compiled; the GPU gates need a GPU" : compiled.verdict.reason;
    if (!session) {
      json rec = compile_record(*c, compiled, compiler.nvrtc_version());
      rec["compile"]["log"] = compiled.log.substr(0, 4096);
      if (!compiled.verdict.ok()) feedback.push_back(failure_feedback(rec));
      return verdict;
    }
  }
  json rec;
  if (compiled.verdict.ok()) ++evaluated;  // reached the GPU: what GPU-s per evaluation counts
  if (o.quick && compiled.verdict.ok()) {
    annotation["phase"] = "screen";
    rec = evaluate(*c, compiled, quick);
    const double f = number_or(object_or_null(rec, "fitness"), "geomean_median_us", 0);
    verdict["screen_us"] = f;
    const bool promote = f > 0 && (best_quick == 0 || f <= best_quick * o.promote);
    if (f > 0 && (best_quick == 0 || f < best_quick)) best_quick = f;
    if (!promote) {
      verdict["outcome"] = rec["outcome"];
      verdict["reason"] = rec["outcome"] != "ok" ? rec["reason"].get<std::string>()
                          : f > 0 ? fmt::format("screened out: {:.2f} µs on the quick shape, best {:.2f}", f, best_quick)
                                  : "screened out: timing pruned, clearly slower than the elite on the quick shape";
      verdict["gpu_seconds"] = rec["gpu_seconds"];
      return verdict;
    }
  }
  annotation["phase"] = "full";
  rec = evaluate(*c, compiled, full);
  const double f = number_or(object_or_null(rec, "fitness"), "geomean_median_us", 0);
  if (f > 0 && (best == 0 || f < best)) best = f;
  verdict["outcome"] = rec["outcome"];
  verdict["reason"] = rec["reason"];
  verdict["fitness_us"] = f > 0 ? json(f) : json(nullptr);
  verdict["pruned"] = rec["pruned"];
  verdict["admission"] = rec["evolve"].value("admission", "");
  verdict["gpu_seconds"] = rec["gpu_seconds"];
  return verdict;
}

std::string Loop::summary() const {
  return fmt::format("{} evaluations, {:.1f} GPU-s ({:.2f} per evaluation), best {}", evaluated, gpu_s,
                     evaluated ? gpu_s / double(evaluated) : 0.0, best > 0 ? fmt::format("{:.2f} µs", best) : "none yet");
}

void Loop::generation(int gen, Progress& progress) {
  json step = {{"run", run_id}, {"generation", gen}, {"generator", o.generator.substr(0, 200)}, {"time", utc_now_iso8601()}};
  const std::vector<Proposal> props = propose(gen, step);
  // Novelty first, then every survivor compiled in parallel (cached), then the GPU one by one.
  std::vector<json> early(props.size());
  std::vector<std::optional<Candidate>> cands(props.size());
  std::vector<Candidate> to_compile;
  for (size_t i = 0; i < props.size(); ++i)
    if ((cands[i] = admit_proposal(props[i], early[i]))) to_compile.push_back(*cands[i]);
  const std::vector<CompileResult> compiled = compile_all(compiler, to_compile, 0);
  json verdicts = json::array();
  for (size_t i = 0, k = 0; i < props.size(); ++i) {
    if (o.budget_gpu_s > 0 && gpu_s >= o.budget_gpu_s) break;
    progress.start_candidate(size_t(gen) * o.population + i, fmt::format("gen {} proposal {}", gen, i));
    json v = cands[i] ? one(props[i], &*cands[i], compiled[k++], gen, early[i]) : early[i];
    progress.done(fmt::format("gen {} {} {}: {}{}", gen, v.value("variant", "-"), v.value("params", ""),
                              v.value("outcome", "?"),
                              v.value("reason", "").empty() ? "" : " — " + v.value("reason", "").substr(0, 160)));
    verdicts.push_back(v);
  }
  step["verdicts"] = verdicts;
  append_line_durable(trace, step.dump());
}

}  // namespace

void run_evolve(const EvolveOptions& o) {
  Loop loop(o);
  loop.setup();
  Progress progress(size_t(o.generations) * o.population);
  progress.note(fmt::format("evo evolve {}: stage {} ({}), {}, generator {}, {} generations x {}, budget {}; {}", loop.run_id,
                            loop.stage.number, loop.stage.slug, loop.task.name(), o.generator.substr(0, 80), o.generations,
                            o.population, o.budget_gpu_s > 0 ? fmt::format("{:.0f} GPU-s", o.budget_gpu_s) : "none",
                            loop.session ? "records -> " + loop.session->results_file().string()
                                         : "no GPU: through the compile phase only"));
  if (loop.session) loop.session->prepare_references(loop.full, [&](const std::string& s) { progress.note(s); });
  if (loop.session && o.quick) loop.session->prepare_references(loop.quick, [&](const std::string& s) { progress.note(s); });
  const auto t0 = std::chrono::steady_clock::now();
  for (int gen = loop.first_generation; gen < o.generations; ++gen) {
    if (o.budget_gpu_s > 0 && loop.gpu_s >= o.budget_gpu_s) {
      progress.note(fmt::format("GPU-second budget spent ({:.1f} of {:.0f})", loop.gpu_s, o.budget_gpu_s));
      break;
    }
    loop.generation(gen, progress);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int done = gen + 1 - loop.first_generation, left = o.generations - gen - 1;
    double eta = wall / done * left;
    if (o.budget_gpu_s > 0 && loop.gpu_s > 0) eta = std::min(eta, wall / loop.gpu_s * std::max(0.0, o.budget_gpu_s - loop.gpu_s));
    progress.note(fmt::format("generation {}/{} done: {}; ETA {:.0f} s", gen + 1, o.generations, loop.summary(), eta));
  }
  if (loop.session) loop.session->drop_sampled_references(loop.full);
  progress.note(fmt::format("evo evolve {}: {}; trace: {}", loop.run_id, loop.summary(), loop.trace.string()));
  if (!loop.session) throw environment_error(loop.no_gpu + " (the generations above went through the compile phase only)");
}

}  // namespace evo
