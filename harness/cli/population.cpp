// evo population rebuild: populations are a pure function of the records; derive them again.
#include "store/population.h"

#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/errors.h"
#include "store/records.h"

namespace evo {

namespace {

void rebuild(const std::string& results_dir, const std::string& populations_dir) {
  RecordSet rs = read_records(results_dir);
  for (const auto& w : rs.warnings) std::cerr << "evo: warning: " << w << "\n";
  for (const auto& p : rs.problems) std::cerr << "evo: skipped " << p << "\n";
  auto pops = derive_populations(rs.records);
  for (const auto& [key, pop] : pops) {
    write_population(populations_dir, pop);
    size_t elites = 0;
    for (auto& [stage, list] : pop["stages"].items()) elites += list.size();
    std::cout << fmt::format("{}/{}.json: {} stages, {} elites\n", pop["gpu"].get<std::string>(),
                             pop["task"].get<std::string>(), pop["stages"].size(), elites);
  }
  std::cout << fmt::format("{} records read, {} populations written to {}\n", rs.records.size(), pops.size(),
                           populations_dir);
  if (!rs.problems.empty()) g_exit_code = kExitUsage;
}

}  // namespace

void add_population_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("population", "Population files (elite top-3 per stage)");
  cmd->require_subcommand(1);
  auto* rb = cmd->add_subcommand("rebuild", "Derive every population from the records alone");
  auto dirs = std::make_shared<StoreDirs>();
  add_store_dirs(rb, *dirs, "records to read");
  rb->callback([dirs] { rebuild(dirs->results_dir, dirs->populations_dir); });
}

}  // namespace evo
