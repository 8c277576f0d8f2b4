// evo evolve: the generator loop (evolve/loop.h).
#include "ablate/simulate.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/paths.h"
#include "evolve/loop.h"

namespace evo {

namespace {

// --prior DATASET, and the run: the evolve layer cannot read a dataset (the ablate layer sits above
// it), so the command line reads the prior once the options are parsed and hands it over.
void add_prior_and_run(CLI::App* cmd, const std::shared_ptr<EvolveOptions>& o) {
  auto file = std::make_shared<std::string>();
  cmd->add_option("--prior", *file,
                  "a dataset of the same stage (results/datasets/) whose measurements warm-start the builtin's model");
  cmd->callback([o, file] {
    if (!file->empty()) o->prior = read_prior(*file, o->stage);
    run_evolve(*o);
  });
}

}  // namespace

void add_evolve_command(CLI::App& app) {
  auto o = std::make_shared<EvolveOptions>();
  o->results_dir = default_store_dir("results").string();  // the repository's, wherever evo runs from
  o->populations_dir = default_store_dir("populations").string();
  auto* cmd = app.add_subcommand("evolve", "Generations of proposals from a generator, gated, timed and admitted");
  cmd->add_option("--task", o->task, "task")->capture_default_str();
  cmd->add_option("--stage", o->stage, "stage number")->required()->check(at_least(0));
  cmd->add_option(
         "--generator", o->generator,
         "builtin (Bayesian optimization with screens and promotions), screened (uniform screens with the builtin's "
         "promotions, no model), random (uniform draws: the baseline), "
         "genetic (mutation + crossover: the builtin before issue 26), exhaustive (screen every configuration, "
         "then the best in full) or exec:COMMAND (request JSON on stdin, {\"candidates\": [...]} on stdout)")
      ->capture_default_str();
  cmd->add_option("--generations", o->generations, "generations")->check(at_least(1))->capture_default_str();
  cmd->add_option("--population", o->population, "proposals per generation")->check(at_least(1))->capture_default_str();
  cmd->add_option("--budget-gpu-s", o->budget_gpu_s, "stop once this many GPU-seconds are spent (0: no limit)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--operator", o->op, "request parts for exec generators: free, insight or full")
      ->capture_default_str();
  cmd->add_option("--bench", o->bench,
                  "benchmark shape sets or dims (default: the stage's stage.json bench_sets, else gates.json's)")
      ->delimiter(',');
  cmd->add_option("--resume", o->resume, "continue the run with this id (from its records)");
  cmd->add_option("--rng-seed", o->rng_seed, "seed of the builtin generator")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_flag("--quick", o->quick,
                "screen each candidate (small gate, every shape timed, no post-timing check) before its full run, "
                "for generators that do not choose the fidelity themselves");
  cmd->add_option("--promote", o->promote, "with --quick: go on when within this factor of the best screen")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--generator-timeout", o->generator_timeout_s, "seconds an exec generator may take per request")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--results-dir", o->results_dir, "where records and traces go")->capture_default_str();
  cmd->add_option("--populations-dir", o->populations_dir, "where populations are written")->capture_default_str();
  cmd->add_option("--cache-dir", o->cache_dir, "compile and reference cache (default: $XDG_CACHE_HOME/evo)");
  auto* device = cmd->add_option("--device", o->device, "CUDA device index")->check(at_least(0))->capture_default_str();
  cmd->add_option("--devices", o->devices,
                  "GPUs to use at once, e.g. 0,1 or all: one evaluation per GPU from one queue (one GPU model only)")
      ->excludes(device);
  cmd->add_option("--island", o->island,
                  "run island i/N of a search (0-based; default inside a Slurm job array: SLURM_ARRAY_TASK_ID of "
                  "SLURM_ARRAY_TASK_COUNT): its own seed and parents, elites exchanged through --results-dir");
  cmd->add_option(
      "--island-group", o->island_group,
      "name of the island search, the same for all its islands (default: SLURM_ARRAY_JOB_ID, else seed<rng-seed>)");
  cmd->add_option("--migrate-every", o->migrate_every,
                  "islands import the other islands' elites every K generations (0: never)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--migrate-wait", o->migrate_wait_s, "seconds an import waits for an island that is behind")
      ->check(at_least(0))
      ->capture_default_str();
  add_prior_and_run(cmd, o);
}

}  // namespace evo
