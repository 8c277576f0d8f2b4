// evo run --stage N: compile the stage's candidates (parallel, cached), then on the GPU gate
// and time them one by one in isolated workers; records to results/, elites to populations/.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "compile/compile_set.h"
#include "cli/context.h"
#include "core/errors.h"
#include "core/paths.h"
#include "report/table.h"
#include "run/plan.h"
#include "run/progress.h"
#include "run/sampler.h"
#include "run/sanitizer.h"
#include "run/selection.h"
#include "run/session.h"
#include "store/population.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct RunOptions {
  int stage = 0;
  std::vector<std::string> tasks{"fp16-d64"};
  size_t budget = 16;
  std::vector<std::string> shapes, bench;
  std::vector<int> seeds;
  std::string results_dir = "results", populations_dir = "populations", cache_dir;
  uint64_t rng_seed = 0;
  int device = 0;
  unsigned jobs = 0;
  int repeat = 1;
  bool sanitize = false;
  std::string gate_seed;  // empty: drawn now
};

std::string short_shape(const std::string& dims) {
  // "8x16x16x2048x2048x128" -> "S2048"; keeps the header narrow.
  auto parts = dims.substr(0, dims.find(':'));
  size_t p = 0;
  for (int i = 0; i < 3; ++i) p = parts.find('x', p) + 1;
  const std::string sq = parts.substr(p, parts.find('x', p) - p);
  const std::string b = parts.substr(0, parts.find('x'));
  return "B" + b + "·S" + sq;
}

// The best (lowest) fitness of a stage in a population, or 0.
double best_fitness(const json& pop, int stage) {
  auto elites = stage_elites(pop, stage);
  return elites.empty() ? 0.0 : elites.front()["fitness"]["geomean_median_us"].get<double>();
}

// Before any work: a --sanitize run that cannot sanitize must not quietly admit elites.
fs::path sanitizer_or_fail(bool sanitize) {
  if (!sanitize) return {};
  auto found = find_compute_sanitizer();
  const char* named = std::getenv("EVO_COMPUTE_SANITIZER");
  if (!found && named && *named)
    throw environment_error(fmt::format(
        "EVO_COMPUTE_SANITIZER={} is not an executable file: point it at compute-sanitizer (CUDA toolkit) or unset it",
        named));
  if (!found)
    throw environment_error(
        "--sanitize needs compute-sanitizer (CUDA toolkit): put it on PATH, set CUDA_HOME, or set EVO_COMPUTE_SANITIZER");
  return *found;
}

// Plans first, so a bad --shapes or --gate-seed fails before any work. The gate seed is drawn
// now, so no one knows the sampled cases before the run; the records keep it for replays.
std::vector<EvalPlan> make_plans(const Context& ctx, const std::vector<Task>& tasks, const RunOptions& o) {
  const uint32_t gate_seed = o.gate_seed.empty() ? draw_gate_seed() : parse_gate_seed(o.gate_seed);
  std::vector<EvalPlan> plans;
  for (const auto& t : tasks)
    plans.push_back(make_plan(ctx.gates, {t, o.shapes.empty() ? ctx.gates.gate_sets : o.shapes,
                                          o.bench.empty() ? ctx.gates.benchmark_sets : o.bench,
                                          o.seeds.empty() ? ctx.gates.seeds : o.seeds, o.sanitize, gate_seed}));
  return plans;
}

// The GPU session, or null with `no_gpu` saying why (then only the compile table is shown).
std::unique_ptr<Session> open_session(const Context& ctx, const Compiler& compiler, const RunOptions& o,
                                      const fs::path& cache, const fs::path& sanitizer, std::string& no_gpu) {
  try {
    return std::make_unique<Session>(ctx, compiler,
                                     SessionOptions{o.results_dir, o.populations_dir, cache, o.device,
                                                    fmt::format("stage{}", o.stage), {}, true, sanitizer});
  } catch (const EvoError& e) {
    if (e.code() != kExitEnvironment) throw;
    no_gpu = e.what();
    return nullptr;
  }
}

struct TaskWork {
  std::vector<Selected> chosen;
  std::vector<CompileResult> compiled;
};

// With a GPU, seed from the previous stage's elites on this GPU; without, show the defaults.
// Every candidate of the domain is compiled (cheap and cached) so configs that violate a
// constraint do not use up the budget.
TaskWork choose_and_compile(const Stage& stage, const Task& task, const EvalPlan& plan, Session* session,
                            const Compiler& compiler, const RunOptions& o) {
  std::vector<json> prev;
  std::string arch = "sm_90a";
  if (session) {
    if (o.stage > 0) prev = stage_elites(session->population(task, plan.benchmark), o.stage - 1);
    arch = session->gpu().cc >= 90 ? "sm_90a" : fmt::format("sm_{}", session->gpu().cc);
  }
  TaskWork w;
  w.chosen = select_candidates(stage, task, arch, prev, o.rng_seed);
  std::vector<Candidate> cands;
  for (const auto& s : w.chosen) cands.push_back(s.candidate);
  w.compiled = compile_all(compiler, cands, o.jobs);
  TaskWork keep;  // invalid combinations dropped, then the budget kept
  for (size_t i = 0; i < w.chosen.size() && keep.chosen.size() < o.budget; ++i) {
    if (w.compiled[i].verdict.outcome == Outcome::constraints || w.compiled[i].verdict.outcome == Outcome::unsupported) continue;
    keep.chosen.push_back(w.chosen[i]);
    keep.compiled.push_back(w.compiled[i]);
  }
  return keep;
}

void print_compile_table(const std::vector<TaskWork>& work) {
  TextTable t({"variant", "task", "params", "compile", "regs", "spill", "smem", "reason"});
  for (const auto& w : work)
    for (size_t i = 0; i < w.chosen.size(); ++i) {
      const auto& c = w.chosen[i].candidate;
      const auto& r = w.compiled[i];
      t.add({c.variant->id, c.task.name(), c.params_text(), std::string(to_string(r.verdict.outcome)),
             r.resources ? std::to_string(r.resources->registers) : "-",
             r.resources ? std::to_string(r.resources->spill_stores + r.resources->spill_loads) : "-",
             r.resources && r.launch ? fmt::format("{:.1f}K", (r.resources->static_smem + r.launch->smem_bytes) / 1024.0) : "-",
             r.verdict.reason});
    }
  std::cout << t.render() << std::flush;
}

// " — sampled 12/12 passed (seed S)" for a record whose gate drew sampled cases.
std::string sampled_note(const json& rec) {
  const json s = rec["gates"].value("sampled", json());
  if (!s.is_object()) return "";
  return fmt::format(" — sampled {}/{} passed (seed {})", s.value("passed", 0), s.value("cases", 0), s.value("seed", 0u));
}

std::string verdict_text(const json& rec) {
  std::string verdict = rec["outcome"];
  if (rec["outcome"] != "ok") verdict += ": " + rec["reason"].get<std::string>();
  if (rec["pruned"].get<bool>()) verdict += " (pruned: slower than the elite)";
  return verdict;
}

// One row of the final table: the verdict, p50 per benchmark shape, TFLOPS, and the speed-up
// over the previous stage's best.
std::vector<std::string> result_row(const Candidate& c, const json& rec, const EvalPlan& plan, double prev_best) {
  std::vector<std::string> row{c.task.name(), c.variant->id, c.params_text(), verdict_text(rec).substr(0, 90)};
  for (size_t k = 0; k < plan.bench.size(); ++k) {
    std::string cell = "-";
    for (const auto& t : rec["timing"])
      if (t["shape"].get<std::string>() == plan.bench[k].id) cell = fmt::format("{:.1f}", t["median_us"].get<double>());
    row.push_back(cell);
  }
  std::string tflops = "-", vs = "-";
  if (!rec["timing"].empty() && rec["timing"].back().contains("tflops"))
    tflops = fmt::format("{:.0f}", rec["timing"].back()["tflops"].get<double>());
  if (rec["fitness"].is_object() && prev_best > 0)
    vs = fmt::format("{:.2f}×", prev_best / rec["fitness"]["geomean_median_us"].get<double>());
  row.push_back(tflops);
  row.push_back(vs);
  return row;
}

void announce(Progress& progress, const Stage& stage, const Session& session, const Context& ctx, size_t total,
              const fs::path& sanitizer, const EvalPlan& plan) {
  progress.note(fmt::format("evo run: stage {} ({}) on {} [{}], {} candidates, records -> {}", stage.number, stage.slug,
                            session.gpu().name, session.gpu().key, total, session.results_file().string()));
  if (plan.gate_seed && plan.sampled_cases)
    progress.note(fmt::format("gate: {} fixed + {} sampled cases per candidate, gate seed {} (replay: --gate-seed {})",
                              plan.gate_cases.size() - plan.sampled_cases, plan.sampled_cases, *plan.gate_seed,
                              *plan.gate_seed));
  if (!sanitizer.empty())
    progress.note(fmt::format("--sanitize: would-be elites also run {} on the {} shapes under {}",
                              "memcheck, initcheck (+ racecheck, synccheck with shared memory/barriers)",
                              fmt::join(ctx.gates.sanitizer.shape_sets, ","), sanitizer.string()));
}

// Every chosen candidate of one task through the session (gate, timing, record, population).
double evaluate_task(Session& session, const Task& task, const EvalPlan& plan, const TaskWork& w, const RunOptions& o,
                     Progress& progress, size_t& index, std::vector<std::vector<std::string>>& rows) {
  session.prepare_references(plan, [&](const std::string& s) { progress.note(s); });
  const double prev_best = o.stage > 0 ? best_fitness(session.population(task, plan.benchmark), o.stage - 1) : 0.0;
  double gpu_seconds = 0;
  for (size_t n = 0; n < w.chosen.size() * size_t(o.repeat); ++n, ++index) {
    const size_t i = n / size_t(o.repeat);
    const Candidate& c = w.chosen[i].candidate;
    progress.start_candidate(index, fmt::format("{} {} {}", c.task.name(), c.variant->id, c.params_text()));
    const EliteStanding standing = elite_standing(session.population(task, plan.benchmark), o.stage, c.id());
    json rec = session.evaluate(c, w.compiled[i], plan, standing, w.chosen[i].origin,
                                [&](const std::string& ph) { progress.phase(ph); });
    gpu_seconds += rec["gpu_seconds"].get<double>();
    rows.push_back(result_row(c, rec, plan, prev_best));
    progress.done(fmt::format("{} {} {}: {}{}{}", c.task.name(), c.variant->id, c.params_text(), verdict_text(rec).substr(0, 160),
                              sampled_note(rec),
                              rec["fitness"].is_object() ? fmt::format(" — fitness {:.1f} µs", rec["fitness"]["geomean_median_us"].get<double>()) : ""));
  }
  session.drop_sampled_references(plan);
  return gpu_seconds;
}

void print_results(const std::vector<std::vector<std::string>>& rows, const EvalPlan& first_plan, const RunOptions& o,
                   size_t total, double gpu_seconds, const Session& session) {
  std::vector<std::string> header{"task", "variant", "params", "verdict"};
  for (const auto& b : first_plan.bench) header.push_back("p50 µs " + short_shape(b.id));
  header.push_back("TFLOPS (last)");
  header.push_back(fmt::format("× stage {}", o.stage > 0 ? o.stage - 1 : 0));
  TextTable table(header);
  for (const auto& r : rows) table.add(r);
  std::cout << table.render();
  std::cout << fmt::format("{} candidates, {:.1f} GPU-seconds ({:.1f} per candidate); records: {}\n", total, gpu_seconds,
                           total ? gpu_seconds / double(total) : 0.0, session.results_file().string());
}

void run_stage(const RunOptions& o) {
  Context ctx = Context::load();
  const Stage& stage = find_stage(ctx.stages, o.stage);
  auto tasks = ctx.select_tasks(o.tasks);
  const fs::path cache = o.cache_dir.empty() ? default_cache_dir() : fs::path(o.cache_dir);
  ensure_writable_dir(cache, "cache dir");
  ensure_writable_dir(o.results_dir, "results dir");
  ensure_writable_dir(o.populations_dir, "populations dir");
  if (o.budget == 0) throw usage_error("--budget must be at least 1");
  const fs::path sanitizer = sanitizer_or_fail(o.sanitize);
  const std::vector<EvalPlan> plans = make_plans(ctx, tasks, o);
  Compiler compiler(ctx.root, cache, ctx.gates);
  std::string no_gpu;
  std::unique_ptr<Session> session = open_session(ctx, compiler, o, cache, sanitizer, no_gpu);
  std::vector<TaskWork> work;
  for (size_t ti = 0; ti < tasks.size(); ++ti)
    work.push_back(choose_and_compile(stage, tasks[ti], plans[ti], session.get(), compiler, o));
  if (!session) {
    print_compile_table(work);
    throw environment_error(no_gpu);
  }
  size_t total = 0;
  for (const auto& w : work) total += w.chosen.size() * size_t(o.repeat);
  Progress progress(total);
  announce(progress, stage, *session, ctx, total, sanitizer, plans.front());
  size_t index = 0;
  double gpu_seconds = 0;
  std::vector<std::vector<std::string>> rows;
  for (size_t ti = 0; ti < tasks.size(); ++ti)
    gpu_seconds += evaluate_task(*session, tasks[ti], plans[ti], work[ti], o, progress, index, rows);
  print_results(rows, plans.front(), o, total, gpu_seconds, *session);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Gate and time a stage's candidates on the GPU; keep the elite top-3");
  cmd->add_option("--stage", o->stage, "stage number (see evo list)")->required();
  cmd->add_option("--task", o->tasks, "task(s), e.g. fp16-d64,bf16-d128-causal")->delimiter(',')->capture_default_str();
  cmd->add_option("--budget", o->budget, "candidates per task (elite-seeded first, then drawn from the domain)")->capture_default_str();
  cmd->add_option("--shapes", o->shapes, "gate shape sets or BxHqxHkvxSqxSkvxD[:bshd] (default: gates.json)")->delimiter(',');
  cmd->add_option("--bench", o->bench, "benchmark shape sets or dims (default: gates.json)")->delimiter(',');
  cmd->add_option("--seeds", o->seeds, "input seeds for the gate (default: gates.json)")->delimiter(',');
  cmd->add_option("--results-dir", o->results_dir, "where records are appended")->capture_default_str();
  cmd->add_option("--populations-dir", o->populations_dir, "where populations are written")->capture_default_str();
  cmd->add_option("--cache-dir", o->cache_dir, "compile and reference cache (default: $XDG_CACHE_HOME/evo)");
  cmd->add_option("--rng-seed", o->rng_seed, "seed of the reproducible draw from the domain")->capture_default_str();
  cmd->add_option("--device", o->device, "CUDA device index")->capture_default_str();
  cmd->add_option("-j,--jobs", o->jobs, "parallel compiles (default: CPU count)");
  cmd->add_option("--repeat", o->repeat, "evaluate each candidate this many times in a row (measures the spread)")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  cmd->add_option("--gate-seed", o->gate_seed,
                  "seed of the sampled gate cases (default: drawn per run; a record's gate_seed replays its cases)");
  cmd->add_flag("--sanitize", o->sanitize,
                "run candidates about to enter the elite under compute-sanitizer (memcheck, initcheck; racecheck and "
                "synccheck when they use shared memory or barriers); a report keeps them out");
  cmd->callback([o] { run_stage(*o); });
}

}  // namespace evo
