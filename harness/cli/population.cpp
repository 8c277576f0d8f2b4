// evo population rebuild: populations are a pure function of the records; derive them again.
// evo population remeasure: elites gated and timed again on other shapes (the per-regime elites).
#include "store/population.h"

#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/options.h"
#include "core/errors.h"
#include "core/paths.h"
#include "run/remeasure.h"
#include "run/sampler.h"
#include "store/records.h"

namespace evo {

namespace {

void rebuild(const std::string& results_dir, const std::string& populations_dir) {
  ensure_writable_dir(populations_dir, "populations dir", "--populations-dir");
  const auto rebuilding = lock_results(results_dir);  // a merge beside it waits: no stale populations
  RecordSet rs = read_records(results_dir);
  for (const auto& w : rs.warnings) std::cerr << "evo: warning: " << w << "\n";
  for (const auto& p : rs.problems) std::cerr << "evo: skipped " << p << "\n";
  auto pops = derive_populations(rs.records);
  for (const auto& [key, pop] : pops) {
    write_population(populations_dir, pop);
    size_t elites = 0;
    for (const auto& [stage, list] : pop.stages) elites += list.size();
    std::cout << fmt::format("{}/{}.json: {} stages, {} elites\n", pop.gpu, pop.task, pop.stages.size(), elites);
  }
  for (const auto& gone : remove_underived_populations(populations_dir, pops))
    std::cout << fmt::format("{}: removed, no record derives it any more\n",
                             gone.lexically_relative(populations_dir).string());
  for (const auto& w : rs.withdrawn)
    std::cout << fmt::format("withdrawn by revoked.json: {} records of {} ({})\n", w.records.size(),
                             w.revocation.variant, w.revocation.reason);
  std::cout << fmt::format("{} records read, {} populations written to {}\n", rs.records.size(), pops.size(),
                           populations_dir);
  if (!rs.problems.empty()) throw CommandFailed(kExitUsage);  // the lines are named above
}

struct RemeasureCli : StoreDirs, CacheDir, DeviceChoice {
  std::vector<std::string> tasks, bench{"regimes"};
  std::vector<int> stages;
  int top = 1;
  std::string gate_seed, elites_of = "default";
  bool shipped = false;
};

// A population's benchmark key as its file name has it: "default" or "custom-" and 8 hex digits.
const CLI::Validator population_benchmark_key(
    [](std::string& key) -> std::string {
      const bool hex8 = key.size() == 15 && key.rfind("custom-", 0) == 0 &&
                        key.find_first_not_of("0123456789abcdef", 7) == std::string::npos;
      if (key == "default" || hex8) return "";
      return "'" + key + "' is not a population's benchmark: use default or custom-<8 hex digits>";
    },
    "default|custom-<hash>");

// The elites measured again, from their recorded sources, on other benchmark shapes (default:
// gates.json's `regimes` set), so the per-regime elites (store/regimes.h) have times there.
void remeasure(const RemeasureCli& o) {
  const Context ctx = Context::load();
  RemeasureOptions r;
  r.tasks = o.tasks;
  r.stages = o.stages;
  r.top = o.top;
  r.elites_of = o.elites_of;
  r.shipped = o.shipped;
  r.bench = o.bench;
  r.devices = o.devices.empty() ? std::to_string(o.device) : o.devices;
  r.gate_seed = o.gate_seed.empty() ? draw_gate_seed() : parse_gate_seed(o.gate_seed);
  r.exact_sources = true;
  r.results_dir = o.results_dir;
  r.populations_dir = o.populations_dir;
  r.cache_dir = o.cache_path();
  r.tag = "remeasure";
  r.origin = "remeasure";
  r.update_populations = true;
  const auto records = remeasure_elites(ctx, r);
  size_t ok = 0;
  for (const Record& rec : records) ok += rec.outcome == Outcome::ok;
  std::cout << fmt::format("measured {} elite(s) again ({} ok, gate seed {}); populations refreshed\n", records.size(),
                           ok, *r.gate_seed);
  if (ok != records.size()) throw CommandFailed(kExitCorrectness);
}

void add_remeasure(CLI::App* cmd) {
  auto o = std::make_shared<RemeasureCli>();
  auto* rm = cmd->add_subcommand(
      "remeasure",
      "Gate and time elites again on other shapes (default: the `regimes` set), from their recorded sources");
  rm->add_option("--task", o->tasks, "tasks (default: every task with a population on this GPU)")->delimiter(',');
  auto* stages = rm->add_option("--stages", o->stages, "stages whose elites to measure (default: the highest)")
                     ->delimiter(',')
                     ->check(at_least(0));
  auto* top = rm->add_option("--top", o->top, "elites per stage")->check(at_least(1))->capture_default_str();
  rm->add_option("--elites-of", o->elites_of,
                 "whose elites: the population of this benchmark (default, or custom-<hash> as in "
                 "<task>@custom-<hash>.json)")
      ->check(population_benchmark_key)
      ->capture_default_str();
  rm->add_flag("--shipped", o->shipped,
               "instead of --stages and --top: the kernels each task's regime table ships (what `evo export` "
               "compiles), wherever they were measured")
      ->excludes(top)
      ->excludes(stages);
  rm->add_option("--bench", o->bench, "benchmark shape sets or dims")->delimiter(',')->capture_default_str();
  rm->add_option("--gate-seed", o->gate_seed, "the sampled gate cases' seed (default: drawn now)");
  add_store_dirs(rm, *o);
  add_cache_dir(rm, *o);
  add_device_choice(rm, *o);
  rm->callback([o] { remeasure(*o); });
}

}  // namespace

void add_population_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("population", "Population files (elite top-3 per stage, per-regime elites)");
  cmd->require_subcommand(1);
  auto* rb = cmd->add_subcommand("rebuild", "Derive every population from the records alone");
  auto dirs = std::make_shared<StoreDirs>();
  add_store_dirs(rb, *dirs, "records to read");
  rb->callback([dirs] { rebuild(dirs->results_dir, dirs->populations_dir); });
  add_remeasure(cmd);
}

}  // namespace evo
