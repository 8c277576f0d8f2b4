// The "Search ablation" section of COMPARE.md: tables and curves from simulated runs
// (ablate/ablation.h). Same datasets and same strategy code -> same bytes.
#include <fmt/format.h>

#include <algorithm>

#include "ablate/ablation.h"
#include "ablate/ablation_cache.h"
#include "core/errors.h"
#include "core/paths.h"

namespace evo {

namespace {

std::string gap(double us, double optimum) {
  return us > 0 ? fmt::format("{:+.1f} %", (us / optimum - 1) * 100) : "none";
}

std::string share(double x) { return fmt::format("{:.2f}", x); }

// "0.45 / 0.62 (+1.2 %)": the share of seeds within 1 % / 2 % and the median gap.
std::string at_budget(const AblationResult& r, const StrategyRuns& s, double budget) {
  std::vector<double> best;
  for (const auto& run : s.runs) best.push_back(run.best_at(budget) > 0 ? run.best_at(budget) : 1e300);
  const double m = median(best);
  return fmt::format("{} / {} ({})", share(share_within(s, budget, r.optimum, r.spec.close)),
                     share(share_within(s, budget, r.optimum, r.spec.within)), m < 1e300 ? gap(m, r.optimum) : "none");
}

std::string reach_text(const Reach& r, double horizon) {
  auto n = [&](double x) { return x >= horizon ? fmt::format("> {:.0f}", horizon) : fmt::format("{:.1f}", x); };
  return fmt::format("{} [{} – {}] ({} of {})", n(r.median), n(r.q1), n(r.q3), r.got, r.of);
}

std::string percent(double x) { return fmt::format("{:g} %", x * 100); }

void budget_table(std::string& md, const AblationResult& r) {
  md += fmt::format(
      "Share of the seeds whose best full evaluation is within {} / within {} of the optimum at each budget "
      "(median gap), and the GPU-seconds each seed needed to come within {}: median [interquartile range] (seeds "
      "that got there within {:.0f} GPU-s; one that did not counts as {:.0f}):\n\n",
      percent(r.spec.close), percent(r.spec.within), percent(r.spec.within), r.spec.horizon_gpu_s,
      r.spec.horizon_gpu_s);
  md += "| GPU-s |";
  for (const auto& s : r.strategies) md += fmt::format(" `{}` |", s.strategy);
  md += "\n|---:|";
  for (size_t i = 0; i < r.strategies.size(); ++i) md += "---|";
  md += "\n";
  for (double b : r.spec.budgets) {
    md += fmt::format("| {:.0f} |", b);
    for (const auto& s : r.strategies) md += " " + at_budget(r, s, b) + " |";
    md += "\n";
  }
  md += fmt::format("| GPU-s to {} |", percent(r.spec.within));
  const double target = r.optimum * (1 + r.spec.within);
  for (const auto& s : r.strategies)
    md += " " + reach_text(reach(s, target, r.spec.horizon_gpu_s), r.spec.horizon_gpu_s) + " |";
  md += "\n\n";
}

// The share of seeds within 2 % every twentieth of the largest budget: the curves.
void curves(std::string& md, const AblationResult& r) {
  const double largest = *std::max_element(r.spec.budgets.begin(), r.spec.budgets.end());
  md +=
      fmt::format("Share of the seeds within {} of the optimum against GPU-seconds:\n\n```\n", percent(r.spec.within));
  std::vector<size_t> width;
  for (const auto& s : r.strategies) width.push_back(std::max<size_t>(12, s.strategy.size() + 2));
  md += fmt::format("{:>8}", "GPU-s");
  for (size_t i = 0; i < r.strategies.size(); ++i) md += fmt::format("{:>{}}", r.strategies[i].strategy, width[i]);
  md += "\n";
  for (int k = 1; k <= 20; ++k) {
    const double at = largest * k / 20;
    md += fmt::format("{:>8.0f}", at);
    for (size_t i = 0; i < r.strategies.size(); ++i)
      md += fmt::format("{:>{}.2f}", share_within(r.strategies[i], at, r.optimum, r.spec.within), width[i]);
    md += "\n";
  }
  md += "```\n\n";
}

// What the columns say about the model: the builtin against the screened baseline (the same
// screens and promotions, no model) and against random sampling in full; with `rule`, issue 31's
// decision rule as lab/notes/hard-domain-plan.md fixed it before the wide domain was measured.
void targets(std::string& md, const AblationResult& r, bool rule) {
  const StrategyRuns* b = r.find("builtin");
  if (!b) return;
  const double target = r.optimum * (1 + r.spec.within), horizon = r.spec.horizon_gpu_s;
  const Reach rb = reach(*b, target, horizon);
  for (const char* other : {"screened", "random"}) {
    const StrategyRuns* o = r.find(other);
    if (!o) continue;
    const Reach ro = reach(*o, target, horizon);
    md += fmt::format("- builtin against {}: median GPU-s to {} {:.1f} vs {:.1f} ({:.2f}×); share within {} at", other,
                      percent(r.spec.within), rb.median, ro.median, ro.median > 0 ? rb.median / ro.median : 0.0,
                      percent(r.spec.close));
    for (double budget : r.spec.budgets)
      md += fmt::format("{} {:.0f} GPU-s {} vs {}", budget == r.spec.budgets.front() ? "" : ",", budget,
                        share(share_within(*b, budget, r.optimum, r.spec.close)),
                        share(share_within(*o, budget, r.optimum, r.spec.close)));
    md += ".\n";
  }
  const StrategyRuns* screened = r.find("screened");
  if (!rule || !screened) return;
  const Reach rs = reach(*screened, target, horizon);
  md += fmt::format(
      "- issue 31's rule (lab/notes/hard-domain-plan.md), a hard domain: screened's median GPU-s to come within {} "
      "above 100: **{}** ({:.1f}).\n",
      percent(r.spec.within), rs.median > 100 ? "yes" : "no", rs.median);
  md += fmt::format(
      "- the model pays: builtin within {} in at most half of screened's median GPU-seconds: **{}** ({:.1f} vs "
      "{:.1f}), and the model's only where builtin / screened is lower than on each of three permuted landscapes "
      "(`evo ablate --permute 1..3`; COMPARE.md shows seed {}).\n",
      percent(r.spec.within), rb.median <= rs.median / 2 ? "met" : "missed", rb.median, rs.median, kControlPermuteSeed);
}

}  // namespace

std::string render_ablation_markdown(const AblationResult& r) {
  std::string md = fmt::format("### {}: {}{}\n\n", r.dataset, r.objective.name(),
                               r.permuted ? fmt::format(", timings permuted (control, seed {})", *r.permuted) : "");
  if (r.permuted)
    md +=
        "The control: what the GPU said of each configuration (outcome, screen and full evaluation together) "
        "shuffled across the configurations that reached the GPU, so that no structure is left to learn; what "
        "the rules and the compiler decided stays in place. A strategy that leads here leads by its fidelities, "
        "not by a model of the domain.\n\n";
  md += fmt::format(
      "{}, {}, stage {}, run {}: {} configurations, {} allowed by the parsed EVO_CONSTRAINT rules, {} screened "
      "(median {:.2f} GPU-s), {} evaluated in full (median {:.2f} GPU-s). Optimum {:.2f} µs ({}).",
      r.gpu, r.task, r.stage, r.run, r.configs, r.feasible, r.screened, r.screen_cost, r.full, r.full_cost, r.optimum,
      r.optimum_params);
  if (r.deep_gated > 0)
    md += fmt::format(
        " The deep tier is left out of every strategy's cost: {} evaluations of the measuring run paid it (median "
        "{:.1f} GPU-s), on entering its top 3; a real run pays it for each entry into its own.",
        r.deep_gated, r.deep_gate_s);
  if (r.unmeasured > 0)
    md += fmt::format(
        " {} allowed configurations were never measured: a strategy that proposes one is told `unmeasured` at no "
        "cost, every strategy alike, and the optimum is the best of the measured ones.",
        r.unmeasured);
  if (!r.why_objective.empty()) md += " " + r.why_objective;
  if (r.spec.prior)
    md += fmt::format(
        " Prior: `{}` ({} configurations, each as log µs over that dataset's optimum) warm-starts the builtin's "
        "model: it screens the prior's best first and models what it measures less what the prior predicts.",
        r.spec.prior->origin(), r.spec.prior->points().size());
  md += "\n\n";
  budget_table(md, r);
  curves(md, r);
  std::string replayed;
  for (const auto& s : r.strategies) {
    size_t rep = 0, full = 0;
    for (const auto& run : s.runs) rep += run.replayed, full += run.fulls;
    replayed += fmt::format("{}{} {} of {}", replayed.empty() ? "" : ", ", s.strategy, rep, full);
  }
  md += fmt::format(
      "Full evaluations answered from a screen's timing times a full/screen ratio drawn from the {} configurations "
      "measured both ways (the dataset measured them only as screens): {}.\n\n",
      r.ratios, replayed);
  // The rule judges the fitness of the landscape as measured, without a prior (hard-domain-plan.md).
  targets(md, r, r.objective.shape.empty() && !r.permuted && !r.spec.prior);
  return md + "\n";
}

namespace {

// One dataset's part of the section: from its cache when the key matches, else simulated.
std::string dataset_section(const std::filesystem::path& file, const std::string& name, const Dataset& d,
                            AblationSpec spec, std::vector<std::string>* notes) {
  spec.hang_limits = repo_hang_limits(d);
  const auto cache = ablation_cache_path(file);
  std::string why;
  auto results = read_ablation_cache(cache, read_file(file), spec, name, why);
  if (!results) {
    if (notes)
      notes->push_back(fmt::format("{}: {}; simulated the ablation instead (`evo ablate {} --write-cache` writes it)",
                                   cache.string(), why, file.string()));
    results = section_ablations(d, name, spec);
  }
  std::string md;
  for (const auto& r : *results) md += render_ablation_markdown(r);
  return md;
}

}  // namespace

std::string ablation_section(const std::filesystem::path& results_dir, const std::string& gpu_filter,
                             const std::string& task_filter, std::vector<std::string>* notes) {
  const auto dir = results_dir / "datasets";
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Dataset> datasets;
  std::vector<std::filesystem::path> kept;
  for (const auto& f : files) {
    Dataset d = read_dataset(f);
    if ((!gpu_filter.empty() && d.gpu != gpu_filter) || (!task_filter.empty() && d.task != task_filter)) continue;
    kept.push_back(f);
    datasets.push_back(std::move(d));
  }
  if (datasets.empty()) return "";
  const AblationSpec spec;
  std::string md =
      "## Search ablation (simulated over measured datasets)\n\n"
      "`evo ablate` replays the strategies of `evo evolve --generator` (the same classes) over a dataset of the "
      "whole domain measured once on the GPU, paying each evaluation the GPU-seconds it cost there (docs/evolve.md, "
      "\"Datasets and simulation\"): `builtin` (screens chosen by a Gaussian-process model, promotions), "
      "`screened` (uniform screens, the builtin's promotions, no model), `random` (uniform draws, each in full), "
      "`random --quick` (uniform draws screened, then in full within `--promote` of the best screen), "
      "`exhaustive` (every configuration screened in a seeded order, the best screen promoted each generation) and "
      "`genetic` (the builtin before issue 26). " +
      fmt::format("Seeds {}–{} ({} seeds; none used to tune a constant), ", spec.seeds.front(), spec.seeds.back(),
                  spec.seeds.size()) +
      "4 proposals per generation, no earlier records; what counts is the best full evaluation a run with that "
      "budget ends with. A full evaluation of a configuration the dataset measured only as a screen is the screen "
      "times a full/screen ratio drawn from the dataset's own pairs (seeded by the seed and the configuration), and "
      "a hang costs what the limits of the fidelity it is answered at say (gates.json; the screen plan's).\n\n";
  for (size_t i = 0; i < datasets.size(); ++i) {
    const std::string name = "results/datasets/" + kept[i].filename().string();
    try {
      md += dataset_section(kept[i], name, datasets[i], spec, notes);
    } catch (const EvoError& e) {  // one dataset that cannot be replayed does not hide the others
      md += fmt::format("### {}\n\nNot simulated: {}\n\n", name, e.what());
    }
  }
  return md;
}

}  // namespace evo
