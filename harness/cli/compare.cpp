// evo compare [--gpu G] [--task T] [--out FILE|-] [--format md|json|csv] [--results DIR]:
// COMPARE.md (or JSON / CSV) from the records alone; no GPU, no clock, same records -> same bytes.
#include "report/compare.h"

#include <iostream>

#include "ablate/ablation.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "core/paths.h"
#include "evolve/report.h"
#include "report/op_timing.h"
#include "store/atomic_file.h"

namespace evo {

namespace {

struct CompareOptions {
  std::string gpu, task, out, format = "md", results, gates;
};

// The thresholds of gates/gates.json ("compare", "verdict"): the one given with --gates, else the
// repository's. Outside a repository (--results and --out given) the defaults, which are the
// committed gates.json's values.
CompareThresholds compare_thresholds(const CompareOptions& o) {
  if (!o.gates.empty()) return CompareThresholds::from(load_gates_config(o.gates));
  std::filesystem::path root;
  try {
    root = repo_root();
  } catch (const EvoError&) {
    return {};
  }
  return CompareThresholds::from(load_gates_config(root / "gates" / "gates.json"));
}

void run_compare(const CompareOptions& o) {
  // The repo root only for the default paths: with --results and --out given, none is needed.
  const std::filesystem::path results = o.results.empty() ? repo_root() / "results" : std::filesystem::path(o.results);
  const CompareInput input = load_compare_input(results);
  const Comparison comparison = build_comparison(input, {o.gpu, o.task}, compare_thresholds(o));
  std::vector<std::string> notes;  // an ablation simulated because its cache was missing or stale
  const std::string text = o.format == "json" ? render_json(comparison)
                           : o.format == "csv"
                               ? render_csv(comparison)
                               : render_markdown(comparison) + op_timing_section(results, o.gpu, o.task) +
                                     render_evolution_markdown(input.records, o.gpu, o.task) +
                                     ablation_section(results, o.gpu, o.task, &notes);
  for (const auto& n : notes) std::cerr << "evo: note: " << n << "\n";
  if (o.out == "-") {
    std::cout << text;
    return;
  }
  const std::filesystem::path out = o.out.empty() ? results / ("COMPARE." + o.format) : std::filesystem::path(o.out);
  write_file_atomic(out, text);
  std::cout << "wrote " << out.string() << " (" << comparison.sections.size() << " GPU/task sections from "
            << comparison.run_records << " run records and " << comparison.peer_records << " peer records)\n";
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* cmd = app.add_subcommand("compare",
                                 "Write COMPARE.md (stages, peers, failures, chart) from the records; no GPU needed");
  cmd->add_option("--gpu", o->gpu, "only this GPU (gpu_key, e.g. nvidia-h200)");
  cmd->add_option("--task", o->task, "only this task, e.g. fp16-d64");
  cmd->add_option("--out", o->out, "output file, - for stdout (default: <results>/COMPARE.<format>)");
  cmd->add_option("--format", o->format, "md, json or csv")
      ->check(CLI::IsMember({"md", "json", "csv"}))
      ->capture_default_str();
  cmd->add_option("--results", o->results, "results directory with *.jsonl and peers/*.json (default: <repo>/results)");
  cmd->add_option("--gates", o->gates,
                  "gates.json whose \"compare\" and \"verdict\" thresholds to apply (default: the repo's)");
  cmd->callback([o] { run_compare(*o); });
}

}  // namespace evo
