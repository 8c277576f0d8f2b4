// evo ablate DATASET: the search strategies simulated over a dataset (ablate/ablation.h), as a
// Markdown section like COMPARE.md's; no GPU. With --write-cache: COMPARE.md's ablations of the
// dataset written to its ablation cache (ablate/ablation_cache.h), where `evo compare` reads them.
#include <iostream>

#include "ablate/ablation.h"
#include "ablate/ablation_cache.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/errors.h"
#include "core/paths.h"
#include "store/atomic_file.h"

namespace evo {

namespace {

struct AblateOptions {
  std::string dataset, objective = "fitness";
  std::string prior;     // another dataset of the stage, as the builtin's prior; empty: none
  uint64_t permute = 0;  // the permuted-landscape control with this seed; 0: the dataset as measured
  bool write_cache = false;
  AblationSpec spec;
};

// COMPARE.md's ablations of the dataset, at the default spec, into its cache.
void write_cache(const AblateOptions& o) {
  const std::string bytes = read_file(o.dataset);
  const Dataset d = read_dataset(o.dataset);
  AblationSpec spec;
  spec.hang_limits = repo_hang_limits(d);
  const auto results = section_ablations(d, o.dataset, spec);
  const auto file = ablation_cache_path(o.dataset);
  std::filesystem::create_directories(file.parent_path());
  write_file_atomic(file, ablation_cache_text(ablation_cache_key(bytes, spec), results));
  std::cout << "wrote " << file.string() << " (" << results.size() << " ablations of " << spec.seeds.size()
            << " seeds; evo compare reads it while the dataset, the spec and the simulation stay as they are)\n";
}

void ablate(const AblateOptions& o) {
  if (o.write_cache) return write_cache(o);
  for (const auto& s : o.spec.strategies) parse_arm(s);  // a usage error naming the strategies
  if (o.spec.seeds.empty() || o.spec.budgets.empty() || o.spec.population == 0)
    throw usage_error("--seeds, --budgets and --population need at least one (positive) value");
  for (double b : o.spec.budgets)
    if (b <= 0) throw usage_error("--budgets: GPU-seconds must be positive");
  const Dataset d = o.permute ? permuted(read_dataset(o.dataset), o.permute) : read_dataset(o.dataset);
  AblationSpec spec = o.spec;
  spec.hang_limits = repo_hang_limits(d);
  Objective objective;
  std::string why;
  if (o.objective == "hard") {
    objective = hardest_for_random(d, spec, why);
    why = "The hard domain: the benchmark shape where random needs the most GPU-seconds to come within " +
          std::to_string(int(spec.within * 100)) + " % (" + why + ").";
  } else if (o.objective != "fitness") {
    objective.shape = o.objective;
  }
  if (!o.prior.empty()) spec.prior = read_prior(o.prior, d.stage);
  AblationResult r = run_ablation(d, o.dataset, objective, spec);
  r.why_objective = why;
  if (o.permute) r.permuted = o.permute;
  std::cout << render_ablation_markdown(r);
}

}  // namespace

void add_ablate_command(CLI::App& app) {
  auto o = std::make_shared<AblateOptions>();
  auto* cmd = app.add_subcommand(
      "ablate", "Simulate the search strategies over a dataset (evo dataset): best found per GPU-second budget");
  cmd->add_option("dataset", o->dataset, "dataset file (results/datasets/*.json)")->required();
  cmd->add_option("--objective", o->objective,
                  "fitness (geomean of the benchmark shapes), hard (the shape hardest for random), or a shape")
      ->capture_default_str();
  cmd->add_option("--strategies", o->spec.strategies,
                  "strategies to compare, each optionally with \" --quick\" (screened first, as evo evolve --quick)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--seeds", o->spec.seeds, "generator seeds")
      ->delimiter(',')
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--budgets", o->spec.budgets, "GPU-second budgets")
      ->delimiter(',')
      ->check(above(0))
      ->capture_default_str();
  cmd->add_option("--population", o->spec.population, "proposals per generation")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--within", o->spec.within, "the target: this fraction above the optimum")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--permute", o->permute,
                  "the control: the dataset's timings permuted across its configurations with this seed (0: none)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--prior", o->prior,
                  "another dataset of the same stage whose measurements warm-start the builtin's model "
                  "(judge on a dataset no constant was tuned on)");
  cmd->add_option("--horizon", o->spec.horizon_gpu_s, "GPU-seconds a run may go on to reach the target")
      ->check(above(0))
      ->capture_default_str();
  cmd->add_flag("--write-cache", o->write_cache,
                "simulate what COMPARE.md shows of the dataset (its fitness, the permuted control, the hard domain; "
                "default settings) into results/ablation/<dataset file name>, where evo compare reads it")
      ->excludes("--objective", "--strategies", "--seeds", "--budgets", "--population", "--within", "--permute",
                 "--horizon", "--prior");
  cmd->callback([o] { ablate(*o); });
}

}  // namespace evo
