// Hidden subcommands that evo runs in child processes: NVRTC compiles (killable), GPU
// workers (isolated) and exec generators (contained with everything they start). Not for users; `evo --help` does not
// list them.
#include "cli/commands.h"
#include "compile/compiler.h"
#include "evolve/generator_process.h"
#include "gpu/worker_protocol.h"

namespace evo {

void add_internal_commands(CLI::App& app) {
  auto* compile = app.add_subcommand("__compile", "")->group("");
  auto req = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  compile->add_option("request", *req)->required();
  compile->add_option("out_prefix", *out)->required();
  compile->callback([req, out] { g_exit_code = compile_child_main(*req, *out); });

  auto* worker = app.add_subcommand("__worker", "")->group("");
  auto job = std::make_shared<std::string>();
  worker->add_option("job", *job)->required();
  worker->callback([job] { g_exit_code = worker_main(*job); });

  auto* generator = app.add_subcommand("__generator", "")->group("");
  auto spec = std::make_shared<std::string>();
  generator->add_option("spec", *spec)->required();
  generator->callback([spec] { g_exit_code = generator_child_main(*spec); });
}

}  // namespace evo
