#include "evolve/screen_plan.h"

#include <algorithm>

#include "core/sha256.h"

namespace evo {

PlanRequest screen_plan_request(const GatesConfig& gates, const Task& task, const std::vector<std::string>& bench) {
  return {task, {"small"}, bench, {gates.seeds.empty() ? 0 : gates.seeds.front()}, false, std::nullopt};
}

EvalPlan screen_plan(const GatesConfig& gates, const Task& task, const std::vector<std::string>& bench) {
  EvalPlan p = make_plan(gates, screen_plan_request(gates, task, bench));
  // Not the full gate: never ranked with fitness that passed it.
  Sha256 h;
  for (const auto& b : p.bench) h.update(b.id).update(";");
  p.benchmark = "screen-" + h.hex().substr(0, 8);
  TimingConfig t = gates.timing;
  t.warmup_ms = std::min(t.warmup_ms, 10.0);
  t.min_samples = std::min(t.min_samples, 5);
  t.target_rse = std::max(t.target_rse, 0.01);
  t.shape_budget_ms = std::min(t.shape_budget_ms, 300.0);
  // The timing loop draws its repeat probes among the first min_samples, apart from one.
  t.repeat_probes = std::min(t.repeat_probes, t.min_samples - 1);
  // Full checks of drawn rows (config.h says why): 4096 rows, 32 samples' worth.
  t.full_check_rows = 4096;
  p.timing = t;
  // A kernel that hangs (a register split at the limit can) costs the screen seconds, not ten:
  // the small gate's cases take milliseconds, a screened shape well under a second.
  Limits l = gates.limits;
  l.gate_case_s = std::min(l.gate_case_s, 2.0);
  l.timing_shape_s = std::min(l.timing_shape_s, 10.0);
  p.limits = l;
  return p;
}

}  // namespace evo
