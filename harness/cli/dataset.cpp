// evo dataset --run RUN [--results-dir DIR] --out FILE: a search dataset (ablate/dataset.h) from
// the records of one `evo evolve --generator exhaustive` run; no GPU.
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
  std::string run, results_dir = default_store_dir("results").string(), out;
};

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
  cmd->add_option("--run", o->run, "the evolve run id")->required();
  cmd->add_option("--results-dir", o->results_dir, "records to read")->capture_default_str();
  cmd->add_option("--out", o->out, "the dataset file, e.g. results/datasets/<gpu>-stage7-fp16-d128.json")->required();
  cmd->callback([o] { build(*o); });
}

}  // namespace evo
