// evo list [--json]: stages, variants, tunables with their domains, and tasks.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/context.h"
#include "report/table.h"

namespace evo {

namespace {

void run_list(bool as_json) {
  Context ctx = Context::load();
  nlohmann::json out = {{"stages", nlohmann::json::array()}, {"tasks", nlohmann::json::array()}};
  for (const auto& t : all_tasks()) out["tasks"].push_back(t.name());
  for (const auto& t : opt_in_tasks()) out["opt_in_tasks"].push_back(t.name());  // only when named (--task)
  for (const auto& s : ctx.stages) {
    nlohmann::json js = {{"stage", s.number},
                         {"slug", s.slug},
                         {"title", s.title},
                         {"dir", s.dir.string()},
                         {"variants", nlohmann::json::array()}};
    for (const auto& v : s.variants) {
      nlohmann::json params = nlohmann::json::object();
      for (const auto& t : v.params) params[t.name] = t.values;
      js["variants"].push_back({{"id", v.id},
                                {"summary", v.summary},
                                {"parent", v.parent ? nlohmann::json(*v.parent) : nlohmann::json()},
                                {"params", params},
                                {"configs", expand_params(v).size()},
                                {"dtypes", v.dtypes},
                                {"head_dims", v.head_dims},
                                {"min_sm", v.min_sm},
                                {"path", v.path.string()}});
    }
    out["stages"].push_back(js);
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  for (const auto& s : ctx.stages) {
    std::cout << fmt::format("stage {} ({}): {}\n", s.number, s.slug, s.title);
    for (const auto& v : s.variants) {
      std::string params;
      for (const auto& t : v.params) {
        std::string vals;
        for (long x : t.values) vals += (vals.empty() ? "" : ",") + std::to_string(x);
        params += fmt::format(" {}={{{}}}", t.name, vals);
      }
      std::cout << fmt::format("  {:<32} {}\n", v.id, v.summary);
      std::cout << fmt::format("  {:<32}  params:{} ({} configs); {}; d{}; sm_{}+\n", "",
                               params.empty() ? " none" : params, expand_params(v).size(), fmt::join(v.dtypes, "/"),
                               fmt::join(v.head_dims, "/d"), v.min_sm);
    }
    if (s.variants.empty()) std::cout << "  (no variants)\n";
  }
  std::cout << "tasks: ";
  std::string sep;
  for (const auto& t : all_tasks()) {
    std::cout << sep << t.name();
    sep = ", ";
  }
  std::cout << "; opt-in (--task): ";
  sep.clear();
  for (const auto& t : opt_in_tasks()) {
    std::cout << sep << t.name();
    sep = ", ";
  }
  std::cout << "\n";
}

}  // namespace

void add_list_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("list", "List stages, variants, tunables and tasks");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "machine-readable output");
  cmd->callback([as_json] { run_list(*as_json); });
}

}  // namespace evo
