#include "export/export_plan.h"

#include <fmt/format.h>

#include "core/errors.h"

namespace evo {

namespace {

const char* kRebuild = " (derive it again from the records: `evo population rebuild`)";

bool same_rule(const RegimeRule& a, const RegimeRule& b) {
  return a.decode_max_seq_q == b.decode_max_seq_q && a.short_max_seq_q == b.short_max_seq_q &&
         a.batched_min_batch_heads == b.batched_min_batch_heads;
}

// The reader (store/population.h) has checked the table: the four regimes in order, every
// kernel it names listed. What is left is the plan's: a kernel for every regime.
ExportTask plan_task(const Task& task, const RegimeTable& regimes, const std::string& origin, ExportPlan& plan) {
  ExportTask t{task, {}, {}};
  for (size_t i = 0; i < size_t(kRegimes); ++i) {
    const RegimeChoice& row = regimes.table.at(i);
    const std::string name = regime_name(row.regime);
    if (!row.kernel)
      throw usage_error(fmt::format(
          "{}: no kernel for the {} regime: none of the task's elites has passed the deep tier (run `evo run --task "
          "{}`, or re-gate its elites with `evo population remeasure --task {}`)",
          origin, name, task.name(), task.name()));
    size_t k = 0;
    while (k < plan.kernels.size() && plan.kernels[k].kernel.candidate_id != *row.kernel) ++k;
    if (k == plan.kernels.size())
      plan.kernels.push_back({fmt::format("k{}", k), task, *regimes.kernel(*row.kernel), {}});
    plan.kernels[k].regimes.push_back(name);
    t.kernel[i] = int(k);
    t.choice[i] = row.choice;
  }
  return t;
}

}  // namespace

std::string ExportKernel::label() const {
  std::string params;
  for (const auto& [k, v] : kernel.params) params += (params.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return fmt::format("{} stage {} {} {}", task.name(), kernel.stage, kernel.variant, params);
}

ExportPlan plan_export(const std::string& gpu, const std::vector<std::pair<Task, Population>>& populations,
                       const std::vector<std::string>& origins) {
  ExportPlan plan;
  plan.gpu = gpu;
  std::optional<RegimeRule> rule;
  for (size_t i = 0; i < populations.size(); ++i) {
    const auto& [task, pop] = populations[i];
    const std::string& origin = origins.at(i);
    for (const auto& t : plan.tasks)
      if (t.task == task) throw usage_error(fmt::format("--task names {} twice", task.name()));
    if (!pop.regimes) throw usage_error(fmt::format("{}: no regimes table{}", origin, kRebuild));
    // One package, one dispatch rule.
    if (rule && !same_rule(*rule, pop.regimes->rule))
      throw usage_error(fmt::format("{}: its regime rule differs from the other tasks'{}", origin, kRebuild));
    rule = pop.regimes->rule;
    plan.tasks.push_back(plan_task(task, *pop.regimes, origin, plan));
  }
  if (rule) plan.rule = *rule;
  return plan;
}

}  // namespace evo
