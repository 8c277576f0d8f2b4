#include "run/remeasure.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "compile/compile_set.h"
#include "core/errors.h"
#include "core/sha256.h"
#include "gpu/device_select.h"
#include "run/device_pool.h"
#include "run/elite_source.h"
#include "run/session.h"
#include "store/population.h"
#include "store/regimes.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
const Variant* find_variant(const Context& ctx, const std::string& id) {
  for (const auto& s : ctx.stages)
    for (const auto& v : s.variants)
      if (v.id == id) return &v;
  return nullptr;
}

// The tasks asked for, or every task with a population on this GPU, by name.
std::vector<Task> remeasure_tasks(const Context& ctx, const RemeasureOptions& o, const Session& session) {
  const fs::path pop_dir =
      (o.populations_dir.empty() ? ctx.root / "populations" : o.populations_dir) / session.gpu().key;
  std::vector<Task> tasks;
  if (!o.tasks.empty()) {
    for (const auto& t : o.tasks) tasks.push_back(parse_task(t));
  } else if (fs::is_directory(pop_dir)) {
    for (const auto& e : fs::directory_iterator(pop_dir))
      if (e.path().extension() == ".json" && e.path().stem().string().find('@') == std::string::npos)
        tasks.push_back(parse_task(e.path().stem().string()));
  }
  if (tasks.empty())
    throw usage_error(
        fmt::format("no populations for {} under {}: run `evo run` first", session.gpu().key, pop_dir.string()));
  std::sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.name() < b.name(); });
  return tasks;
}

struct Item {
  Candidate candidate;
  CompileResult compiled;
  size_t plan;
};
using Sources = std::vector<std::shared_ptr<const EliteSource>>;  // the variants exact candidates point at

// The recorded source of an elite (`exact_sources`): the variant the records measured.
const Variant* exact_variant(const Context& ctx, const Elite& e, Sources& sources) {
  std::string why;
  auto found = find_elite_source(ctx, {e.variant, e.source_path.value_or(""), e.source_sha256.value_or("")}, &why);
  if (!found) throw usage_error(why);
  sources.push_back(std::make_shared<const EliteSource>(std::move(*found)));
  return &sources.back()->variant;
}

// An elite's candidate: the recorded source with `exact_sources`, else the variant file as it
// is now (warning when it changed since). The tunables in the variant's declaration order.
Candidate elite_candidate(const Context& ctx, const RemeasureOptions& o, const Elite& e, const Task& task,
                          const Session& session, Sources& sources) {
  const Variant* v = o.exact_sources ? exact_variant(ctx, e, sources) : find_variant(ctx, e.variant);
  if (!v) throw usage_error(fmt::format("elite {} of {} is no longer in variants/", e.variant, task.name()));
  if (sha256_hex(v->source) != e.source_sha256.value_or(""))
    spdlog::warn("{} changed since it became an elite; measuring the file as it is now", v->id);
  ParamSet params;
  for (const Tunable& t : v->params)
    for (const auto& [name, value] : e.params)
      if (name == t.name) params.emplace_back(name, value);
  for (const auto& item : e.params) {
    // A named copy, not a structured binding: clang 14 (CI's fuzz build) cannot capture those.
    const std::string name = item.first;
    if (std::none_of(params.begin(), params.end(), [&](const auto& p) { return p.first == name; }))
      params.push_back(item);
  }
  return Candidate{v, params, task, session.gpu().arch()};
}

// The stages to measure of a population: --stages, --stage, or the highest with elites.
std::vector<int> chosen_stages(const RemeasureOptions& o, const Population& pop) {
  if (!o.stages.empty()) return o.stages;
  int stage = o.stage;
  if (stage < 0)
    for (const auto& [k, v] : pop.stages)
      if (!v.empty()) stage = std::max(stage, k);
  return {stage};
}

// Per task, the plan and the top elites of the chosen stages (or the shipped kernels), compiled.
void plan_elites(const Context& ctx, const RemeasureOptions& o, Session& session, Compiler& compiler,
                 std::vector<EvalPlan>& plans, std::vector<Item>& items, Sources& sources) {
  for (const Task& task : remeasure_tasks(ctx, o, session)) {
    const Population pop = session.population(task, o.elites_of);
    std::vector<Elite> elites;
    if (o.shipped) {
      elites = shipped_kernels(pop);
    } else {
      for (int stage : chosen_stages(o, pop)) {
        auto list = stage_elites(pop, stage);
        for (int i = 0; i < o.top && i < int(list.size()); ++i) elites.push_back(list[size_t(i)]);
      }
    }
    if (elites.empty()) continue;
    plans.push_back(make_plan(
        ctx.gates, {task, ctx.gates.gate_sets, o.bench.empty() ? ctx.gates.benchmark_sets : o.bench, ctx.gates.seeds,
                    false, o.gate_seed, o.deep_tier ? std::nullopt : std::optional<bool>(false)}));
    session.prepare_references(plans.back(), [](const std::string& s) { spdlog::info("{}", s); });
    for (const Elite& e : elites) {
      Candidate c = elite_candidate(ctx, o, e, task, session, sources);
      items.push_back({c, compiler.compile(c), plans.size() - 1});
    }
  }
}
}  // namespace

// The kernels a task's regime table dispatches to, which `evo export` ships: the regate of what
// ships measures exactly these, wherever their records came from (custom-bench ones included).
std::vector<Elite> shipped_kernels(const Population& pop) {
  std::vector<Elite> out;
  if (!pop.regimes) return out;
  for (const RegimeKernel& k : pop.regimes->kernels) {
    Elite e;
    e.candidate_id = k.candidate_id;
    e.variant = k.variant;
    e.source_path = k.source_path;
    e.source_sha256 = k.source_sha256;
    e.params = k.params;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Record> remeasure_elites(const Context& ctx, const RemeasureOptions& o) {
  Compiler compiler(ctx.root, o.cache_dir, ctx.gates);
  const fs::path results_dir = !o.results_file.parent_path().empty() ? o.results_file.parent_path()
                               : o.results_dir.empty()               ? fs::path(".")
                                                                     : o.results_dir;
  auto sessions = open_sessions(ctx, compiler,
                                SessionOptions{results_dir,
                                               o.populations_dir.empty() ? ctx.root / "populations" : o.populations_dir,
                                               o.cache_dir,
                                               0,
                                               o.tag,
                                               o.results_file,
                                               o.update_populations,
                                               {},
                                               {}},
                                query_devices(o.devices));
  std::vector<EvalPlan> plans;
  std::vector<Item> items;
  Sources sources;
  plan_elites(ctx, o, *sessions.front(), compiler, plans, items, sources);
  // One GPU, or the elites shared out over several of one model (--devices).
  std::vector<Record> out(items.size());
  const PoolReport pool = run_device_pool(
      sessions.size(), items.size(),
      [&](size_t slot, size_t k) {
        const Item& it = items[k];
        spdlog::info("re-measuring {} {} {} on GPU {}", it.candidate.task.name(), it.candidate.variant->id,
                     it.candidate.params_text(), sessions[slot]->gpu().index);
        out[k] = sessions[slot]->evaluate(it.candidate, it.compiled, plans[it.plan], EliteStanding{}, o.origin,
                                          [](const std::string&) {});
      },
      [&](size_t slot, size_t k, const std::string& why) {
        const Item& it = items[k];
        out[k] = sessions[slot]->record_device_failure(it.candidate, it.compiled, plans[it.plan], o.origin, why);
      });
  if (!pool.not_run.empty())
    throw environment_error(fmt::format("every GPU failed ({}); {} elite(s) were not measured",
                                        fmt::join(pool.failed_devices, "; "), pool.not_run.size()));
  return out;
}

}  // namespace evo
