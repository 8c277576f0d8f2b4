// evo eval FILE.cu: one candidate from anywhere through compile, the resource gate, the
// correctness gate and timing; a structured verdict (JSON with --json), a record, and the
// source stored content-addressed under results/sources/ so populations can point at it.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/options.h"
#include "compile/compile_record.h"
#include "core/errors.h"
#include "core/paths.h"
#include "evolve/request.h"
#include "evolve/source_store.h"
#include "run/sampler.h"
#include "run/session.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/record.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct EvalOptions {
  std::string file;
  std::vector<std::string> tasks{"fp16-d64"};
  int stage = -1;  // default: the last stage
  bool as_json = false, quick = false;
  std::string results_dir = default_store_dir("results").string(),
              populations_dir = default_store_dir("populations").string(), cache_dir;
  int device = 0;
};

// The candidate's fitness against the stage's elites and, per shape, against the best peer.
json standing_json(const Record& rec, const Population& population, int stage, const fs::path& peers_file) {
  json s = {{"elites", json::array()}, {"peers", json::array()}};
  const double f = rec.fitness ? rec.fitness->geomean_median_us.value_or(0) : 0;
  for (const auto& e : stage_elites(population, stage)) {
    const double ef = e.fitness_us();
    s["elites"].push_back({{"candidate_id", e.candidate_id ? json(*e.candidate_id) : json(nullptr)},
                           {"fitness_us", ef},
                           {"speedup", f > 0 && ef > 0 ? json(ef / f) : json(nullptr)}});
  }
  if (!fs::exists(peers_file)) return s;
  const json peers = json::parse(read_file(peers_file), nullptr, false);
  for (const TimingEntry& t : rec.timing.value_or(std::vector<TimingEntry>{})) {
    if (!t.shape || !t.median_us) continue;
    json best;
    for (const auto& p : peers.is_array() ? peers : json::array())
      if (string_or(p, "task") == rec.task && string_or(p, "shape") == *t.shape && p.contains("timing") &&
          !p["timing"].empty() && (best.is_null() || p["timing"][0]["median_us"] < best["timing"][0]["median_us"]))
        best = p;
    if (!best.is_null())
      s["peers"].push_back({{"shape", *t.shape},
                            {"peer", best["variant"]},
                            {"peer_us", best["timing"][0]["median_us"]},
                            {"speedup", best["timing"][0]["median_us"].get<double>() / *t.median_us}});
  }
  return s;
}

json verdict_json(const Record& typed, const CompileResult& compiled) {
  const json rec = write_record(typed);  // the verdict is JSON (--json) with the record's fields
  json v = failure_feedback(typed);
  v["compile_log"] = compiled.log.substr(0, 4096);
  v["resources"] = object_or_null(object_or_null(rec, "compile"), "resources");
  v["launch"] = object_or_null(object_or_null(rec, "compile"), "launch");
  v["technique"] = object_or_null(object_or_null(rec, "compile"), "technique");  // SASS counts (HGMMA, UTMALDG, ...)
  v["timing"] = rec.value("timing", json::array());
  v["fitness"] = rec.value("fitness", json(nullptr));
  v["gpu_seconds"] = rec.value("gpu_seconds", 0.0);
  v["source_path"] = rec.value("source_path", "");
  v["task"] = rec.value("task", "");
  return v;
}

// `v`: verdict_json of `rec`.
void print_verdict(const Record& rec, const json& v) {
  std::cout << fmt::format("{} {}: {}{}\n", rec.task, rec.variant, to_string(rec.outcome),
                           rec.reason.value_or("").empty() ? "" : " — " + *rec.reason);
  if (v["resources"].is_object()) std::cout << "  resources: " << v["resources"].dump() << "\n";
  if (v["technique"].is_object()) std::cout << "  SASS technique: " << v["technique"].dump() << "\n";
  if (rec.outcome == Outcome::compile && !v.value("compile_log", "").empty())
    std::cout << "  compile log:\n" << v["compile_log"].get<std::string>() << "\n";
  if (v.contains("failing_case")) std::cout << "  failing case: " << v["failing_case"].dump() << "\n";
  for (const auto& t : v["timing"])
    std::cout << fmt::format("  {}: median {:.2f} µs, {:.0f} TFLOPS\n", string_or(t, "shape"),
                             number_or(t, "median_us", 0), number_or(t, "tflops", 0));
  if (v["fitness"].is_object())
    std::cout << fmt::format("  fitness {:.2f} µs\n", v["fitness"]["geomean_median_us"].get<double>());
  if (v.contains("standing")) std::cout << "  standing: " << v["standing"].dump() << "\n";
}

void run_eval(const EvalOptions& o) {
  Context ctx = Context::load();
  const Stage& stage = find_stage(ctx.stages, o.stage >= 0 ? o.stage : ctx.stages.back().number);
  if (!fs::is_regular_file(o.file)) throw usage_error(o.file + ": no such file (evo eval takes a .cu file)");
  const std::string source = read_file(o.file);
  const fs::path cache = o.cache_dir.empty() ? default_cache_dir() : fs::path(o.cache_dir);
  ensure_writable_dir(cache, "cache dir", "--cache-dir");
  Compiler compiler(ctx.root, cache, ctx.gates);
  std::unique_ptr<Session> session;
  std::string no_gpu;
  SessionOptions so{o.results_dir, o.populations_dir, cache, o.device, "eval", {}, true, {}, {}};
  CompileResult current;
  auto annotate = [&](Record& rec) {
    rec.origin = "eval";
    if (rec.outcome != Outcome::compile) return;
    if (!rec.compile) rec.compile = RecordCompile{};
    rec.compile->extra["log"] = current.log.substr(0, 4096);
  };
  try {
    ensure_writable_dir(o.results_dir, "results dir", "--results-dir");
    session = std::make_unique<Session>(ctx, compiler, so);
    session->set_annotate(annotate);
  } catch (const EvoError& e) {
    if (e.code() != kExitEnvironment) throw;
    no_gpu = e.what();
  }
  // Stored only when a record will point at it; a compile check leaves results/ untouched.
  const fs::path path = session ? store_source(ctx.root, o.results_dir, source) : fs::path(o.file);
  const Variant variant = external_variant(source, stage, path, o.file, std::nullopt);
  const std::string arch = session && session->gpu().cc < 90 ? fmt::format("sm_{}", session->gpu().cc) : "sm_90a";
  json out = json::array();
  for (const auto& t : ctx.select_tasks(o.tasks)) {
    Candidate c{&variant, default_params(variant), t, arch};
    current = compiler.compile(c);
    Record rec = compile_record(c, current, compiler.nvrtc_version());
    if (session && current.verdict.ok()) {
      const EvalPlan plan = make_plan(ctx.gates, o.quick ? quick_plan_request(ctx.gates, t)
                                                         : PlanRequest{t, ctx.gates.gate_sets, ctx.gates.benchmark_sets,
                                                                       ctx.gates.seeds, false, draw_gate_seed()});
      session->prepare_references(plan, [](const std::string&) {});
      const Population pop = session->population(t, plan.benchmark);
      rec = session->evaluate(c, current, plan, elite_standing(pop, stage.number, c.id()), "eval",
                              [](const std::string&) {});
      session->drop_sampled_references(plan);
      json v = verdict_json(rec, current);
      v["standing"] =
          standing_json(rec, pop, stage.number, fs::path(o.results_dir) / "peers" / (session->gpu().key + ".json"));
      out.push_back(v);
    } else {
      out.push_back(verdict_json(rec, current));
    }
    if (!o.as_json) print_verdict(rec, out.back());
  }
  if (o.as_json) std::cout << json{{"file", o.file}, {"stage", stage.number}, {"verdicts", out}}.dump(1) << "\n";
  // A verdict, whatever it says, is a successful evaluation: exit 0 (the JSON carries it).
  if (!session) throw environment_error(no_gpu + " (compile verdict above; the gates and timing need a GPU)");
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  auto* cmd = app.add_subcommand(
      "eval", "One kernel file from anywhere through compile, gates and timing; a verdict and a record");
  cmd->add_option("file", o->file, "the .cu file (front matter first, docs/variants.md)")->required();
  cmd->add_option("--task", o->tasks, "task(s)")->delimiter(',')->capture_default_str();
  cmd->add_option("--stage", o->stage, "the stage it competes in (default: the last)")->check(at_least(0));
  cmd->add_flag("--json", o->as_json, "the verdict as JSON");
  cmd->add_flag("--quick", o->quick, "cheap screen: the small gate shapes with one seed, one benchmark shape");
  cmd->add_option("--results-dir", o->results_dir, "where the record goes")->capture_default_str();
  cmd->add_option("--populations-dir", o->populations_dir, "where populations are written")->capture_default_str();
  cmd->add_option("--cache-dir", o->cache_dir, "compile and reference cache (default: $XDG_CACHE_HOME/evo)");
  cmd->add_option("--device", o->device, "CUDA device index")->check(at_least(0))->capture_default_str();
  cmd->callback([o] { run_eval(*o); });
}

}  // namespace evo
