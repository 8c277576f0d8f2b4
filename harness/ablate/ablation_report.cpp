// The "Search ablation" section of COMPARE.md: tables and curves from simulated runs
// (ablate/ablation.h). Same datasets and same strategy code -> same bytes.
#include <fmt/format.h>

#include <algorithm>

#include "ablate/ablation.h"
#include "core/errors.h"

namespace evo {

namespace {

std::string gap(double us, double optimum) {
  return us > 0 ? fmt::format("{:+.1f} %", (us / optimum - 1) * 100) : "none";
}

// "359.20 µs (+0.8 %) [+0.0 … +2.4 %]": the median over the seeds and the spread.
std::string at_budget(const StrategyRuns& s, double budget, double optimum) {
  std::vector<double> best;
  size_t none = 0;
  for (const auto& run : s.runs) {
    const double b = run.best_at(budget);
    b > 0 ? best.push_back(b) : void(++none);
  }
  if (best.size() * 2 <= s.runs.size()) return fmt::format("none in {} of {}", none, s.runs.size());
  for (size_t i = 0; i < none; ++i) best.push_back(1e300);  // a run with none ranks last
  std::sort(best.begin(), best.end());
  const double m = median(best);
  const std::string worst = best.back() >= 1e300 ? "none" : gap(best.back(), optimum);
  return fmt::format("{:.2f} µs ({}) [{} … {}]", m, gap(m, optimum), gap(best.front(), optimum), worst);
}

struct Reach {
  double median = 0, lo = 0, hi = 0;
  size_t got = 0, of = 0;
};

Reach reach(const StrategyRuns& s, double target, double horizon) {
  Reach r;
  std::vector<double> v;
  for (const auto& run : s.runs) {
    const auto t = run.gpu_s_to(target);
    v.push_back(t.value_or(horizon));
    r.got += t.has_value();
  }
  r.of = v.size();
  std::sort(v.begin(), v.end());
  if (!v.empty()) r.median = median(v), r.lo = v.front(), r.hi = v.back();
  return r;
}

std::string reach_text(const Reach& r, double horizon) {
  auto n = [&](double x) { return x >= horizon ? fmt::format("> {:.0f}", horizon) : fmt::format("{:.1f}", x); };
  return fmt::format("{} [{} … {}] ({} of {} got there)", n(r.median), n(r.lo), n(r.hi), r.got, r.of);
}

void budget_table(std::string& md, const AblationResult& r) {
  md += "| GPU-s |";
  for (const auto& s : r.strategies) md += fmt::format(" `{}` |", s.strategy);
  md += "\n|---:|";
  for (size_t i = 0; i < r.strategies.size(); ++i) md += "---|";
  md += "\n";
  for (double b : r.spec.budgets) {
    md += fmt::format("| {:.0f} |", b);
    for (const auto& s : r.strategies) md += " " + at_budget(s, b, r.optimum) + " |";
    md += "\n";
  }
  md += "| within 2 % after |";
  const double target = r.optimum * (1 + r.spec.within);
  for (const auto& s : r.strategies)
    md += " " + reach_text(reach(s, target, r.spec.horizon_gpu_s), r.spec.horizon_gpu_s) + " GPU-s |";
  md += "\n\n";
}

// The median gap every tenth of the largest budget: the curves, as a table and as text.
void curves(std::string& md, const AblationResult& r) {
  const double largest = *std::max_element(r.spec.budgets.begin(), r.spec.budgets.end());
  md += "Median gap to the optimum against GPU-seconds (`-`: most runs had no full evaluation yet):\n\n```\n";
  md += fmt::format("{:>8}", "GPU-s");
  for (const auto& s : r.strategies) md += fmt::format("{:>12}", s.strategy);
  md += "\n";
  for (int k = 1; k <= 20; ++k) {
    const double at = largest * k / 20;
    md += fmt::format("{:>8.0f}", at);
    for (const auto& s : r.strategies) {
      std::vector<double> best;
      for (const auto& run : s.runs) best.push_back(run.best_at(at) > 0 ? run.best_at(at) : 1e300);
      const double m = median(best);
      md += m < 1e300 ? fmt::format("{:>11.1f}%", (m / r.optimum - 1) * 100) : fmt::format("{:>12}", "-");
    }
    md += "\n";
  }
  md += "```\n\n";
}

void targets(std::string& md, const AblationResult& r, bool hard) {
  const StrategyRuns* b = r.find("builtin");
  const StrategyRuns* rnd = r.find("random");
  if (!b || !rnd) return;
  auto med = [&](const StrategyRuns& s, double budget) {
    std::vector<double> v;
    for (const auto& run : s.runs) v.push_back(run.best_at(budget) > 0 ? run.best_at(budget) : 1e300);
    return median(v);
  };
  const double at100 = med(*b, 100);
  bool ahead = true;
  // Ahead, or both at the optimum (nothing is ahead of that).
  for (double budget : r.spec.budgets)
    ahead = ahead && (med(*b, budget) < med(*rnd, budget) || med(*b, budget) <= r.optimum);
  md += fmt::format("- builtin's median within 2 % of the optimum at 100 GPU-s: **{}** ({}).\n",
                    at100 <= r.optimum * 1.02 ? "met" : "missed", gap(at100 < 1e300 ? at100 : 0, r.optimum));
  md += fmt::format("- builtin's median ahead of random's at every budget (or at the optimum): **{}**.\n",
                    ahead ? "met" : "missed");
  if (!hard) return;
  const double target = r.optimum * (1 + r.spec.within), horizon = r.spec.horizon_gpu_s;
  const Reach rb = reach(*b, target, horizon), rr = reach(*rnd, target, horizon);
  md += fmt::format("- a hard domain (random's median > 200 GPU-s to come within 2 %): **{}** ({:.1f}).\n",
                    rr.median > 200 ? "yes" : "no", rr.median);
  md += fmt::format("- builtin within 2 % in at most half of random's median GPU-seconds: **{}** ({:.1f} vs {:.1f}).\n",
                    rb.median <= rr.median / 2 ? "met" : "missed", rb.median, rr.median);
}

}  // namespace

std::string render_ablation_markdown(const AblationResult& r) {
  std::string md = fmt::format("### {}: {}\n\n", r.dataset, r.objective.name());
  md += fmt::format(
      "{}, {}, stage {}, run {}: {} configurations, {} allowed by the parsed EVO_CONSTRAINT rules, {} screened "
      "(median {:.2f} GPU-s), {} evaluated in full (median {:.2f} GPU-s). Optimum {:.2f} µs ({}).",
      r.gpu, r.task, r.stage, r.run, r.configs, r.feasible, r.screened, r.screen_cost, r.full, r.full_cost, r.optimum,
      r.optimum_params);
  if (r.unmeasured > 0)
    md += fmt::format(
        " {} allowed configurations were never measured: a strategy that proposes one is told `unmeasured` at no "
        "cost, every strategy alike, and the optimum is the best of the measured ones.",
        r.unmeasured);
  if (!r.why_objective.empty()) md += " " + r.why_objective;
  md += "\n\nBest full evaluation at each budget, median over the seeds (gap to the optimum) [best … worst seed]:\n\n";
  budget_table(md, r);
  curves(md, r);
  std::string replayed;
  for (const auto& s : r.strategies) {
    size_t rep = 0, full = 0;
    for (const auto& run : s.runs) rep += run.replayed(), full += run.fulls();
    replayed += fmt::format("{}{} {} of {}", replayed.empty() ? "" : ", ", s.strategy, rep, full);
  }
  md += "Full evaluations answered from a screen's timing (the dataset measured them only as screens): " + replayed +
        ".\n\n";
  targets(md, r, !r.why_objective.empty());
  return md + "\n";
}

namespace {

// One dataset on its fitness, then on its hard domain.
std::string dataset_section(const Dataset& d, const std::string& name, const AblationSpec& spec) {
  std::string md = render_ablation_markdown(run_ablation(d, name, Objective{}, spec));
  std::string why;
  const Objective hard = hardest_for_random(d, spec, why);
  if (hard.shape.empty()) return md;
  AblationResult r = run_ablation(d, name, hard, spec);
  r.why_objective =
      "The hard domain: of the benchmark shapes as the objective, the one where random sampling "
      "needs the most GPU-seconds (median over the seeds) to come within 2 % of the optimum (" +
      why + ").";
  return md + render_ablation_markdown(r);
}

}  // namespace

std::string ablation_section(const std::filesystem::path& results_dir, const std::string& gpu_filter,
                             const std::string& task_filter) {
  const auto dir = results_dir / "datasets";
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Dataset> datasets;
  std::vector<std::string> names;
  for (const auto& f : files) {
    Dataset d = read_dataset(f);
    if ((!gpu_filter.empty() && d.gpu != gpu_filter) || (!task_filter.empty() && d.task != task_filter)) continue;
    names.push_back("results/datasets/" + f.filename().string());
    datasets.push_back(std::move(d));
  }
  if (datasets.empty()) return "";
  const AblationSpec spec;
  std::string md =
      "## Search ablation (simulated over measured datasets)\n\n"
      "`evo ablate` replays the strategies of `evo evolve --generator builtin|random|genetic` (the same classes) "
      "over a dataset of the whole domain measured once on the GPU, paying each evaluation the GPU-seconds it "
      "cost there (docs/evolve.md, \"Datasets and simulation\"). Seeds 1–5, 4 proposals per generation, no earlier "
      "records; "
      "what counts is the best full evaluation a run with that budget ends with. `genetic` is the builtin "
      "generator before issue 26.\n\n";
  for (size_t i = 0; i < datasets.size(); ++i) {
    try {
      md += dataset_section(datasets[i], names[i], spec);
    } catch (const EvoError& e) {  // one dataset that cannot be replayed does not hide the others
      md += fmt::format("### {}\n\nNot simulated: {}\n\n", names[i], e.what());
    }
  }
  return md;
}

}  // namespace evo
