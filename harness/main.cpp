// evo: evolve CUDA attention kernels stage by stage. See README.md and docs/.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "core/leftovers.h"
#include "core/version.h"

namespace {

// Every subcommand, in the order `evo --help` lists them.
void add_commands(CLI::App& app) {
  evo::add_list_command(app);
  evo::add_compile_command(app);
  evo::add_doctor_command(app);
  evo::add_run_command(app);
  evo::add_population_command(app);
  evo::add_compare_command(app);
  evo::add_gate_command(app);
  evo::add_merge_command(app);
  evo::add_eval_command(app);
  evo::add_request_command(app);
  evo::add_evolve_command(app);
  evo::add_docs_command(app);
  evo::add_export_command(app);
  evo::add_dataset_command(app);
  evo::add_ablate_command(app);
  evo::add_internal_commands(app);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"evo: evolve CUDA attention kernels stage by stage, with gates you can trust"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("evo ") + evo::evo_version());
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug logging");
  app.parse_complete_callback([&] { spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info); });
  spdlog::set_pattern("%^%l%$: %v");

  add_commands(app);

  // A killed run's scratch files go at the next start; not at a child's (__worker, __compile), of
  // which a run starts many.
  std::error_code no_temp_dir;
  const auto temp_dir = std::filesystem::temp_directory_path(no_temp_dir);
  if (argc > 1 && std::string(argv[1]).rfind("__", 0) != 0 && !no_temp_dir) evo::remove_orphaned_work_files(temp_dir);
  try {
    evo::check_arguments_utf8(std::vector<std::string>(argv + 1, argv + argc));
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "evo: " << e.what() << " (see evo --help)\n";
    return evo::kExitUsage;
  } catch (const evo::EvoError& e) {  // CommandFailed too: its command has said what failed
    if (*e.what()) std::cerr << "evo: " << e.what() << "\n";
    return e.code();
  } catch (const std::filesystem::filesystem_error& e) {  // a full disk, a lost mount, permissions
    std::cerr << "evo: " << e.what() << "\n";
    return evo::kExitEnvironment;
  } catch (const std::bad_alloc&) {
    std::cerr << "evo: out of memory\n";
    return evo::kExitEnvironment;
  } catch (const std::exception& e) {  // none of the above: a bug in evo, not in its input or machine
    std::cerr << "evo: internal error: " << e.what() << " (a bug in evo: please report it with the command)\n";
    return evo::kExitInternal;
  }
  return evo::kExitOk;
}
