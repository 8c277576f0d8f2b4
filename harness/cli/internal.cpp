// Hidden subcommands that evo runs in child processes: NVRTC compiles (killable), GPU
// workers (isolated) and exec generators (contained with everything they start). Not for users; `evo --help` does not
// list them.
#include "cli/commands.h"
#include "compile/compiler.h"
#include "core/errors.h"
#include "evolve/generator_process.h"
#include "gpu/worker_protocol.h"

namespace evo {

namespace {
// A child's status is its parent's protocol (a compile child's 10: NVRTC said no), passed as it is.
void exit_with(int status) {
  if (status != 0) throw CommandFailed(ExitCode(status));
}
}  // namespace

void add_internal_commands(CLI::App& app) {
  auto* compile = app.add_subcommand("__compile", "")->group("");
  auto req = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  compile->add_option("request", *req)->required();
  compile->add_option("out_prefix", *out)->required();
  compile->callback([req, out] { exit_with(compile_child_main(*req, *out)); });

  auto* worker = app.add_subcommand("__worker", "")->group("");
  auto job = std::make_shared<std::string>();
  worker->add_option("job", *job)->required();
  worker->callback([job] { exit_with(worker_main(*job)); });

  auto* generator = app.add_subcommand("__generator", "")->group("");
  auto spec = std::make_shared<std::string>();
  generator->add_option("spec", *spec)->required();
  generator->callback([spec] { exit_with(generator_child_main(*spec)); });
}

}  // namespace evo
