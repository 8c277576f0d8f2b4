// evo run --stage N: compile the stage's candidates (parallel, cached), then on the GPU gate
// and time them one by one in isolated workers; records to results/, elites to populations/.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/options.h"
#include "compile/compile_set.h"
#include "core/errors.h"
#include "core/paths.h"
#include "core/shard.h"
#include "gpu/device_select.h"
#include "report/table.h"
#include "run/device_pool.h"
#include "run/eval_phases.h"
#include "run/plan.h"
#include "run/progress.h"
#include "run/sampler.h"
#include "run/sanitizer.h"
#include "run/selection.h"
#include "run/session.h"
#include "run/stage_bench.h"
#include "store/population.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct RunOptions : StoreDirs, CacheDir, DeviceChoice {
  int stage = 0;
  std::vector<std::string> tasks{"fp16-d64"};
  size_t budget = 16;
  std::vector<std::string> shapes, bench;
  std::vector<int> seeds;
  uint64_t rng_seed = 0;
  std::string shard;  // --shard i/N (else the Slurm array task)
  unsigned jobs = 0;
  int repeat = 1;
  bool sanitize = false;
  std::string gate_seed;               // empty: drawn now
  std::vector<std::string> only_text;  // --only as written
  std::vector<ConfigPattern> only;     // parsed: these configurations alone
};

// The best (lowest) fitness of a stage in a population, or 0.
double best_fitness(const Population& pop, int stage) {
  auto elites = stage_elites(pop, stage);
  return elites.empty() ? 0.0 : elites.front().fitness_us();
}

// Plans first: a bad --shapes or --gate-seed fails before any work. The gate seed is drawn now
// (recorded for replays); benchmark sets: --bench, else stage.json bench_sets, else gates.json's.
std::vector<EvalPlan> make_plans(const Context& ctx, const Stage& stage, const std::vector<Task>& tasks,
                                 const RunOptions& o) {
  const uint32_t gate_seed = o.gate_seed.empty() ? draw_gate_seed() : parse_gate_seed(o.gate_seed);
  const std::vector<std::string> bench = bench_sets_for(ctx, stage, o.bench);
  std::vector<EvalPlan> plans;
  for (const auto& t : tasks)
    plans.push_back(make_plan(ctx.gates, {t, o.shapes.empty() ? ctx.gates.gate_sets : o.shapes, bench,
                                          o.seeds.empty() ? ctx.gates.seeds : o.seeds, o.sanitize, gate_seed}));
  return plans;
}

// A session per GPU of --devices (or --device), or none with `no_gpu` saying why (then only the
// compile table is shown). A selection the host cannot serve is a usage error, before any work.
std::vector<std::unique_ptr<Session>> open_device_sessions(const Context& ctx, const Compiler& compiler,
                                                           const RunOptions& o, const fs::path& cache,
                                                           const fs::path& sanitizer, const Shard& shard,
                                                           std::string& no_gpu) {
  try {
    const auto gpus = query_devices(o.devices.empty() ? std::to_string(o.device) : o.devices);
    const std::string tag =
        fmt::format("stage{}{}", o.stage, shard.active() ? fmt::format("-shard{}of{}", shard.index, shard.count) : "");
    return open_sessions(
        ctx, compiler,
        SessionOptions{
            o.results_dir, o.populations_dir, cache, 0, tag, {}, true, sanitizer, shard.active() ? shard.text() : ""},
        gpus);
  } catch (const EvoError& e) {
    if (e.code() != kExitEnvironment) throw;
    no_gpu = e.what();
    return {};
  }
}

struct TaskWork {
  std::vector<Selected> chosen;
  std::vector<CompileResult> compiled;
};
struct WorkItem {
  size_t task, candidate;
};

// --shard: keeps this shard's positions of the list of every task's candidates, in order.
void keep_shard(std::vector<TaskWork>& work, const Shard& shard) {
  size_t position = 0;
  for (auto& w : work) {
    TaskWork kept;
    for (size_t i = 0; i < w.chosen.size(); ++i, ++position)
      if (shard.owns(position)) {
        kept.chosen.push_back(w.chosen[i]);
        kept.compiled.push_back(w.compiled[i]);
      }
    w = std::move(kept);
  }
}

// With a GPU, seed from the previous stage's elites on this GPU; without, show the defaults. Every
// candidate is compiled (cheap, cached) so configs that violate a constraint spend no budget.
TaskWork choose_and_compile(const Stage& stage, const Task& task, const EvalPlan& plan, Session* session,
                            const Compiler& compiler, const RunOptions& o) {
  std::vector<Elite> prev;
  std::string arch = "sm_90a";
  if (session) {
    if (o.stage > 0) prev = stage_elites(session->population(task, plan.benchmark), o.stage - 1);
    arch = session->gpu().arch();
  }
  TaskWork w;
  w.chosen = select_candidates(stage, task, arch, prev, o.rng_seed);
  keep_only(w.chosen, o.only, task.name());
  // Large tunable spaces (stage 7: hundreds of configs): compile only enough to fill the
  // budget after constraint rejections, in selection order (elites first).
  const size_t cap = std::max<size_t>(o.budget * 4, 16);
  if (w.chosen.size() > cap) w.chosen.erase(w.chosen.begin() + long(cap), w.chosen.end());
  std::vector<Candidate> cands;
  for (const auto& s : w.chosen) cands.push_back(s.candidate);
  w.compiled = compile_all(compiler, cands, o.jobs);
  TaskWork keep;  // invalid combinations dropped, then the budget kept
  for (size_t i = 0; i < w.chosen.size() && keep.chosen.size() < o.budget; ++i) {
    if (w.compiled[i].verdict.outcome == Outcome::constraints || w.compiled[i].verdict.outcome == Outcome::unsupported)
      continue;
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
             r.resources && r.launch
                 ? fmt::format("{:.1f}K", (r.resources->static_smem + r.launch->smem_bytes) / 1024.0)
                 : "-",
             r.verdict.reason});
    }
  std::cout << t.render() << std::flush;
}

// " — sampled 12/12 passed (seed S)" for a record whose gate drew sampled cases.
std::string sampled_note(const Record& rec) {
  if (!rec.gates || !rec.gates->sampled) return "";
  const SampledGateSummary& s = *rec.gates->sampled;
  return fmt::format(" — sampled {}/{} passed (seed {})", s.passed.value_or(0), s.cases.value_or(0),
                     s.seed.value_or(0));
}

std::string verdict_text(const Record& rec) {
  std::string verdict(to_string(rec.outcome));
  if (rec.outcome != Outcome::ok) verdict += ": " + rec.reason.value_or("");
  if (rec.pruned.value_or(false)) verdict += " (pruned: slower than the elite)";
  return verdict;
}

// One row of the final table: the verdict, p50 per benchmark shape, TFLOPS, and the speed-up
// over the previous stage's best.
std::vector<std::string> result_row(const Candidate& c, const Record& rec, const EvalPlan& plan, double prev_best) {
  std::vector<std::string> row{c.task.name(), c.variant->id, c.params_text(), verdict_text(rec).substr(0, 90)};
  const std::vector<TimingEntry> timing = rec.timing.value_or(std::vector<TimingEntry>{});
  for (size_t k = 0; k < plan.bench.size(); ++k) {
    std::string cell = "-";
    for (const TimingEntry& t : timing)
      if (t.shape == plan.bench[k].id && t.median_us) cell = fmt::format("{:.1f}", *t.median_us);
    row.push_back(cell);
  }
  std::string tflops = "-", vs = "-";
  if (!timing.empty() && timing.back().tflops) tflops = fmt::format("{:.0f}", *timing.back().tflops);
  if (rec.fitness && rec.fitness->geomean_median_us && prev_best > 0)
    vs = fmt::format("{:.2f}×", prev_best / *rec.fitness->geomean_median_us);
  row.push_back(tflops);
  row.push_back(vs);
  return row;
}

void announce(Progress& progress, const Stage& stage, const Session& session, size_t gpus, const Shard& shard,
              const Context& ctx, size_t total, const fs::path& sanitizer, const EvalPlan& plan) {
  progress.note(fmt::format("evo run: stage {} ({}) on {} [{}] x{}, {} candidates, records -> {}", stage.number,
                            stage.slug, session.gpu().name, session.gpu().key, gpus, total,
                            session.results_file().string()));
  if (shard.active())
    progress.note(fmt::format("shard {} (from {}): {} of the stage's candidates", shard.text(), shard.source, total));
  if (plan.gate_seed && plan.sampled_cases)
    progress.note(fmt::format("gate: {} fixed + {} sampled cases per candidate, gate seed {} (replay: --gate-seed {})",
                              plan.gate_cases.size() - plan.sampled_cases, plan.sampled_cases, *plan.gate_seed,
                              *plan.gate_seed));
  if (!sanitizer.empty())
    progress.note(fmt::format("--sanitize: would-be elites also run {} on the {} shapes under {}",
                              "memcheck, initcheck (+ racecheck, synccheck with shared memory/barriers)",
                              fmt::join(ctx.gates.sanitizer.shape_sets, ","), sanitizer.string()));
}

std::string fitness_suffix(const Record& rec) {
  return rec.fitness && rec.fitness->geomean_median_us
             ? fmt::format(" — fitness {:.1f} µs", *rec.fitness->geomean_median_us)
             : "";
}

// Every item on the sessions' GPUs, one thread per GPU from one queue; records[k] is item k's
// record (empty if it never ran because every GPU had failed).
PoolReport evaluate_on_devices(const std::vector<std::unique_ptr<Session>>& sessions,
                               const std::vector<WorkItem>& items, const std::vector<TaskWork>& work,
                               const std::vector<Task>& tasks, const std::vector<EvalPlan>& plans, int stage,
                               Progress& progress, std::vector<std::optional<Record>>& records) {
  records.assign(items.size(), std::nullopt);
  std::mutex mu;  // progress lines and records from several GPU threads
  const bool several = sessions.size() > 1;
  return run_device_pool(
      sessions.size(), items.size(),
      [&](size_t slot, size_t k) {
        Session& s = *sessions[slot];
        const auto& [ti, i] = items[k];
        const Selected& sel = work[ti].chosen[i];
        const Candidate& c = sel.candidate;
        const std::string label = fmt::format("{} {} {}", c.task.name(), c.variant->id, c.params_text()) +
                                  (several ? fmt::format(" (GPU {})", s.gpu().index) : "");
        {
          std::lock_guard lock(mu);
          progress.start_candidate(k, label);
        }
        const EliteStanding standing = elite_standing(s.population(tasks[ti], plans[ti].benchmark), stage, c.id());
        Record rec = s.evaluate(c, work[ti].compiled[i], plans[ti], standing, sel.origin, [&](const std::string& ph) {
          if (!several) progress.phase(ph);  // one live line cannot follow several GPUs
        });
        std::lock_guard lock(mu);
        progress.done(
            fmt::format("{}: {}{}{}", label, verdict_text(rec).substr(0, 160), sampled_note(rec), fitness_suffix(rec)));
        records[k] = std::move(rec);
      },
      [&](size_t slot, size_t k, const std::string& why) {
        const auto& [ti, i] = items[k];
        Record rec = sessions[slot]->record_device_failure(work[ti].chosen[i].candidate, work[ti].compiled[i],
                                                           plans[ti], work[ti].chosen[i].origin, why);
        std::lock_guard lock(mu);
        progress.note(fmt::format("GPU {} ({}) failed; its candidate is recorded as crash, the other GPUs go on: {}",
                                  sessions[slot]->gpu().index, sessions[slot]->gpu().uuid, why));
        records[k] = std::move(rec);
      });
}

void print_results(const std::vector<WorkItem>& items, const std::vector<TaskWork>& work,
                   const std::vector<EvalPlan>& plans, const std::vector<std::optional<Record>>& records,
                   const std::vector<double>& prev_best, int stage) {
  std::vector<std::string> header{"task", "variant", "params", "verdict"};
  for (const auto& b : plans.front().bench) header.push_back("p50 µs " + short_shape(b.id));
  header.push_back("TFLOPS (last)");
  header.push_back(fmt::format("× stage {}", stage > 0 ? stage - 1 : 0));
  TextTable table(header);
  for (size_t k = 0; k < items.size(); ++k)
    if (records[k])  // empty: not run, every GPU had failed
      table.add(result_row(work[items[k].task].chosen[items[k].candidate].candidate, *records[k], plans[items[k].task],
                           prev_best[items[k].task]));
  std::cout << table.render();
}

void print_summary(const std::vector<std::optional<Record>>& records,
                   const std::vector<std::unique_ptr<Session>>& sessions, const PoolReport& pool, double wall_s) {
  std::vector<Record> ran;
  double gpu_seconds = 0;
  for (const auto& rec : records)
    if (rec) ran.push_back(*rec), gpu_seconds += rec->gpu_seconds.value_or(0);
  const size_t evaluated = ran.size();
  std::vector<std::string> per_gpu;
  for (size_t s = 0; s < sessions.size(); ++s)
    per_gpu.push_back(
        fmt::format("GPU {} {}: {}", sessions[s]->gpu().index, sessions[s]->gpu().uuid, pool.items_per_device[s]));
  std::cout << fmt::format("{} candidates, {:.1f} GPU-seconds ({:.1f} per candidate); records: {}\n", evaluated,
                           gpu_seconds, evaluated ? gpu_seconds / double(evaluated) : 0.0,
                           sessions.front()->results_file().string());
  std::cout << fmt::format("wall {:.1f} s on {} GPU(s): {:.2f} candidates per wall-minute ({})\n", wall_s,
                           sessions.size(), wall_s > 0 ? double(evaluated) * 60.0 / wall_s : 0.0,
                           fmt::join(per_gpu, "; "));
  if (const std::string means = phase_means(ran); !means.empty()) std::cout << means << "\n";
  if (!pool.not_run.empty())
    throw environment_error(
        fmt::format("every GPU failed ({}); {} candidate(s) were not evaluated and nothing else was "
                    "lost: run the same command again on working GPUs",
                    fmt::join(pool.failed_devices, "; "), pool.not_run.size()));
}

void run_stage(const RunOptions& o) {
  Context ctx = Context::load();
  const Stage& stage = find_stage(ctx.stages, o.stage);
  auto tasks = ctx.select_tasks(o.tasks);
  const fs::path cache = o.cache_path();
  ensure_writable_dir(cache, "cache dir", "--cache-dir");
  ensure_writable_dir(o.results_dir, "results dir", "--results-dir");
  ensure_writable_dir(o.populations_dir, "populations dir", "--populations-dir");
  if (o.budget == 0) throw usage_error("--budget must be at least 1");
  const fs::path sanitizer = required_compute_sanitizer(o.sanitize);
  const std::vector<EvalPlan> plans = make_plans(ctx, stage, tasks, o);
  Compiler compiler(ctx.root, cache, ctx.gates);
  const Shard shard = resolve_shard(o.shard);
  std::string no_gpu;
  const auto sessions = open_device_sessions(ctx, compiler, o, cache, sanitizer, shard, no_gpu);
  Session* session = sessions.empty() ? nullptr : sessions.front().get();
  std::vector<TaskWork> work;
  for (size_t ti = 0; ti < tasks.size(); ++ti)
    work.push_back(choose_and_compile(stage, tasks[ti], plans[ti], session, compiler, o));
  if (!session) {
    print_compile_table(work);
    throw environment_error(no_gpu);
  }
  if (shard.active()) keep_shard(work, shard);
  std::vector<WorkItem> items;
  for (size_t ti = 0; ti < tasks.size(); ++ti)
    for (size_t i = 0; i < work[ti].chosen.size(); ++i)
      for (int r = 0; r < o.repeat; ++r) items.push_back({ti, i});
  Progress progress(items.size());
  announce(progress, stage, *session, sessions.size(), shard, ctx, items.size(), sanitizer, plans.front());
  std::vector<double> prev_best(tasks.size(), 0.0);
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    // References are cached by content: prepared once here, every GPU's session reads them.
    session->prepare_references(plans[ti], [&](const std::string& s) { progress.note(s); });
    if (o.stage > 0) prev_best[ti] = best_fitness(session->population(tasks[ti], plans[ti].benchmark), o.stage - 1);
  }
  const auto wall_start = std::chrono::steady_clock::now();
  std::vector<std::optional<Record>> records;
  const PoolReport pool = evaluate_on_devices(sessions, items, work, tasks, plans, o.stage, progress, records);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  for (const auto& plan : plans) session->drop_sampled_references(plan);
  if (sessions.size() > 1) session->refresh_populations();  // once more, after every GPU thread's last append
  print_results(items, work, plans, records, prev_best, o.stage);
  print_summary(records, sessions, pool, wall_s);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Gate and time a stage's candidates on the GPU; keep the elite top-3");
  cmd->add_option("--stage", o->stage, "stage number (see evo list)")->required()->check(at_least(0));
  cmd->add_option("--task", o->tasks, "task(s), e.g. fp16-d64,bf16-d128-causal")->delimiter(',')->capture_default_str();
  cmd->add_option("--budget", o->budget, "candidates per task (elite-seeded first, then drawn from the domain)")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--shapes", o->shapes, "gate shape sets or BxHqxHkvxSqxSkvxD[:bshd] (default: gates.json)")
      ->delimiter(',');
  cmd->add_option("--bench", o->bench, "benchmark sets or dims (default: stage.json, gates.json)")->delimiter(',');
  cmd->add_option("--seeds", o->seeds, "input seeds for the gate (default: gates.json)")
      ->delimiter(',')
      ->check(at_least(0));
  add_store_dirs(cmd, *o);
  add_cache_dir(cmd, *o);
  cmd->add_option("--rng-seed", o->rng_seed, "seed of the reproducible draw from the domain")
      ->check(at_least(0))
      ->capture_default_str();
  add_device_choice(cmd, *o);
  add_shard_option(cmd, o->shard, "evaluate the candidate list's");
  cmd->add_option("-j,--jobs", o->jobs, "parallel compiles (default: CPU count)")->check(at_least(0));
  cmd->add_option("--repeat", o->repeat, "evaluate each candidate this many times in a row (measures the spread)")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  cmd->add_option("--gate-seed", o->gate_seed,
                  "seed of the sampled gate cases (default: drawn per run; a record's gate_seed replays its cases)");
  cmd->add_option("--only", o->only_text,
                  "only these configurations, each VARIANT or VARIANT:NAME=VALUE,... (repeat the flag for more; "
                  "tunables not named take every value; --budget still caps the count)");
  cmd->add_flag("--sanitize", o->sanitize,
                "run candidates about to enter the elite under compute-sanitizer (memcheck, initcheck; racecheck and "
                "synccheck when they use shared memory or barriers); a report keeps them out");
  cmd->callback([o] {
    o->only.clear();
    for (const auto& text : o->only_text) o->only.push_back(parse_config_pattern(text));
    run_stage(*o);
  });
}

}  // namespace evo
