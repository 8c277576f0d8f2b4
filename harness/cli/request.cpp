// evo context --task T --stage N: the request a generator gets (JSON, or Markdown with --md),
// built from the records alone (no GPU needed). See evolve/request.h for what is in it.
#include "evolve/request.h"

#include <iostream>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/options.h"
#include "core/errors.h"
#include "core/paths.h"
#include "run/stage_bench.h"
#include "store/records.h"

namespace evo {

namespace {

struct RequestOptions {
  std::string task = "fp16-d64";
  int stage = 0;
  bool as_json = false, as_md = false;
  std::string op = "full", gpu, results_dir = default_store_dir("results").string();
  size_t max_failures = 8;
};

void run_request(const RequestOptions& o) {
  if (o.as_json && o.as_md) throw usage_error("--json and --md: pick one");
  if (!valid_operator(o.op)) throw usage_error("--operator " + o.op + ": use free, insight or full");
  Context ctx = Context::load();
  const Stage& stage = find_stage(ctx.stages, o.stage);
  RecordSet records = read_records(o.results_dir);
  // The shapes the stage is timed on, as evo run and evo evolve choose them without --bench.
  RequestInputs in{&ctx,
                   &stage,
                   parse_task(o.task),
                   o.gpu,
                   o.op,
                   &records.records,
                   {},
                   o.max_failures,
                   nullptr,
                   {},
                   bench_sets_for(ctx, stage, {})};
  const nlohmann::json req = build_request(in);
  if (o.as_md)
    std::cout << request_markdown(req);
  else
    std::cout << req.dump(1) << "\n";
}

}  // namespace

void add_request_command(CLI::App& app) {
  auto o = std::make_shared<RequestOptions>();
  auto* cmd =
      app.add_subcommand("context", "The request a generator gets: task context, elites, insights, recent failures");
  cmd->add_option("--task", o->task, "task")->capture_default_str();
  cmd->add_option("--stage", o->stage, "stage number")->required()->check(at_least(0));
  cmd->add_flag("--json", o->as_json, "JSON (the default)");
  cmd->add_flag("--md", o->as_md, "Markdown");
  cmd->add_option("--operator", o->op, "free (I1), insight (I1+I3) or full (I1+I2+I3); failures always")
      ->capture_default_str();
  cmd->add_option("--gpu", o->gpu, "whose elites, e.g. nvidia-h200 (default: the newest record's GPU)");
  cmd->add_option("--results-dir", o->results_dir, "where the records are")->capture_default_str();
  cmd->add_option("--max-failures", o->max_failures, "recent failures to include")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->callback([o] { run_request(*o); });
}

}  // namespace evo
