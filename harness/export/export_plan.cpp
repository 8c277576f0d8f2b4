#include "export/export_plan.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "store/json_fields.h"
#include "store/regimes.h"

namespace evo {

using nlohmann::json;

namespace {

const char* kRebuild = " (derive it again from the records: `evo population rebuild`)";

const json& kernel_entry(const json& regimes, const std::string& id, const std::string& origin) {
  if (regimes.contains("kernels") && regimes["kernels"].is_array())
    for (const auto& k : regimes["kernels"])
      if (string_or(k, "candidate_id") == id) return k;
  throw usage_error(fmt::format("{}: regimes name kernel {} but do not list it{}", origin, id, kRebuild));
}

// The population's rule, checked against the first one's: one package, one dispatch rule.
RegimeRule read_rule(const json& regimes, const std::string& origin, const std::optional<RegimeRule>& first) {
  auto rule = regime_rule_from_json(object_or_null(regimes, "rule"));
  if (!rule) throw usage_error(fmt::format("{}: regimes.rule is missing or malformed{}", origin, kRebuild));
  if (first && (first->decode_max_seq_q != rule->decode_max_seq_q || first->short_max_seq_q != rule->short_max_seq_q ||
                first->batched_min_batch_heads != rule->batched_min_batch_heads))
    throw usage_error(fmt::format("{}: its regime rule differs from the other tasks'{}", origin, kRebuild));
  return *rule;
}

ExportTask plan_task(const Task& task, const json& regimes, const std::string& origin, ExportPlan& plan) {
  if (!regimes.contains("table") || !regimes["table"].is_array() || regimes["table"].size() != size_t(kRegimes))
    throw usage_error(fmt::format("{}: regimes.table must list the {} regimes{}", origin, kRegimes, kRebuild));
  ExportTask t{task, {}, {}};
  for (size_t i = 0; i < size_t(kRegimes); ++i) {
    const json& row = regimes["table"][i];
    const std::string name = string_or(row, "regime");
    if (name != regime_name(kAllRegimes[i]))
      throw usage_error(fmt::format("{}: regimes.table[{}] is '{}', not '{}'{}", origin, i, name,
                                    regime_name(kAllRegimes[i]), kRebuild));
    const std::string id = string_or(row, "kernel");
    if (id.empty())
      throw usage_error(fmt::format("{}: no kernel for the {} regime: the task has no measured elite yet ({})", origin,
                                    name, "run `evo run` for it first"));
    size_t k = 0;
    while (k < plan.kernels.size() && string_or(plan.kernels[k].summary, "candidate_id") != id) ++k;
    if (k == plan.kernels.size())
      plan.kernels.push_back({fmt::format("k{}", k), task, kernel_entry(regimes, id, origin), {}});
    plan.kernels[k].regimes.push_back(name);
    t.kernel[i] = int(k);
    t.choice[i] = string_or(row, "choice");
  }
  return t;
}

}  // namespace

std::string ExportKernel::label() const {
  std::string params;
  if (summary.contains("params") && summary["params"].is_object())
    for (const auto& [k, v] : summary["params"].items()) params += (params.empty() ? "" : ",") + k + "=" + v.dump();
  const json stage = summary.contains("stage") ? summary["stage"] : json(nullptr);
  return fmt::format("{} stage {} {} {}", task.name(), stage.dump(), string_or(summary, "variant"), params);
}

ExportPlan plan_export(const std::string& gpu, const std::vector<std::pair<Task, json>>& populations,
                       const std::vector<std::string>& origins) {
  ExportPlan plan;
  plan.gpu = gpu;
  std::optional<RegimeRule> rule;
  for (size_t i = 0; i < populations.size(); ++i) {
    const auto& [task, pop] = populations[i];
    const std::string& origin = origins.at(i);
    for (const auto& t : plan.tasks)
      if (t.task == task) throw usage_error(fmt::format("--task names {} twice", task.name()));
    const json regimes = object_or_null(pop, "regimes");
    if (!regimes.is_object()) throw usage_error(fmt::format("{}: no regimes table{}", origin, kRebuild));
    rule = read_rule(regimes, origin, rule);
    plan.tasks.push_back(plan_task(task, regimes, origin, plan));
  }
  if (rule) plan.rule = *rule;
  return plan;
}

}  // namespace evo
