// evo dataset --run RUN [--results-dir DIR] --out FILE: a search dataset (ablate/dataset.h) from
// the records of one `evo evolve --generator exhaustive` run; no GPU. `--upgrade FILE` instead
// rewrites a schema-1 dataset as schema 2 with what records of its run are left.
#include <fmt/format.h>

#include <iostream>

#include "ablate/dataset.h"
#include "cli/commands.h"
#include "cli/context.h"
#include "core/errors.h"
#include "core/paths.h"
#include "store/atomic_file.h"
#include "store/json_fields.h"
#include "store/records.h"

namespace evo {

namespace {

struct DatasetOptions {
  std::string run, upgrade, results_dir = default_store_dir("results").string(), out;
};

void upgrade(const DatasetOptions& o) {
  Dataset d = read_dataset(o.upgrade);
  RecordSet rs = read_records(o.results_dir);
  for (const auto& p : rs.problems) std::cerr << "evo: skipped " << p << "\n";
  const DatasetUpgrade u = upgrade_dataset(d, rs.records);
  write_file_atomic(o.out, dataset_text(d));
  std::cout << fmt::format(
      "wrote {}: schema {}; {} evaluations matched a record of run {} under {}, {} of them with the deep tier "
      "({:.1f} GPU-s moved out of gpu_s into deep_gate_s); {} matched none and read as without it\n",
      o.out, kDatasetSchema, u.matched, d.run, o.results_dir, u.deep_gated, u.deep_gate_s, u.unmatched);
}

void build(const DatasetOptions& o) {
  const Context ctx = Context::load();
  RecordSet rs = read_records(o.results_dir);
  for (const auto& p : rs.problems) std::cerr << "evo: skipped " << p << "\n";
  int stage = -1;
  for (const auto& r : rs.records)
    if (string_or(object_or_null(r, "evolve"), "run") == o.run) stage = r.value("stage", -1);
  if (stage < 0) throw usage_error("--run " + o.run + ": no record of that evolve run under " + o.results_dir);
  const Dataset d = build_dataset(rs.records, o.run, ctx.root, find_stage(ctx.stages, stage));
  write_file_atomic(o.out, dataset_text(d));
  size_t screened = 0, full = 0, unmeasured = 0;
  for (const auto& c : d.configs)
    screened += c.screen.has_value(), full += c.full.has_value(), unmeasured += c.outcome == "unmeasured";
  std::cout << fmt::format("wrote {}: {} {} stage {}: {} configurations, {} screened, {} in full, {} unmeasured\n",
                           o.out, d.gpu, d.task, d.stage, d.configs.size(), screened, full, unmeasured);
}

}  // namespace

void add_dataset_command(CLI::App& app) {
  auto o = std::make_shared<DatasetOptions>();
  auto* cmd = app.add_subcommand(
      "dataset", "Build a search dataset from the records of an `evo evolve --generator exhaustive` run (no GPU)");
  auto* run = cmd->add_option("--run", o->run, "the evolve run id");
  auto* up = cmd->add_option("--upgrade", o->upgrade,
                             "a schema-1 dataset to rewrite as schema 2: the deep tier its run's records show "
                             "(phases.deep_gate_s) moved out of gpu_s")
                 ->check(CLI::ExistingFile);
  run->excludes(up);
  cmd->add_option("--results-dir", o->results_dir, "records to read")->capture_default_str();
  cmd->add_option("--out", o->out, "the dataset file, e.g. results/datasets/<gpu>-stage7-fp16-d128.json")->required();
  cmd->callback([o, run, up] {
    if (run->count() + up->count() != 1) throw usage_error("evo dataset: give --run RUN or --upgrade FILE");
    o->upgrade.empty() ? build(*o) : upgrade(*o);
  });
}

}  // namespace evo
