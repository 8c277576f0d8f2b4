// One file per subcommand; each adds itself to the app and runs from its callback.
#pragma once
#include <CLI/CLI.hpp>

namespace evo {

void add_list_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_doctor_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_population_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_gate_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_eval_command(CLI::App& app);       // cli/eval.cpp
void add_request_command(CLI::App& app);    // cli/request.cpp: evo context
void add_evolve_command(CLI::App& app);     // cli/evolve.cpp
void add_docs_command(CLI::App& app);       // cli/docs.cpp: figures in README/docs from records
void add_export_command(CLI::App& app);     // cli/export.cpp: a C++ library and a PyTorch op
void add_dataset_command(CLI::App& app);    // cli/dataset.cpp: a search dataset from an evolve run
void add_ablate_command(CLI::App& app);     // cli/ablate.cpp: strategies simulated over a dataset
void add_internal_commands(CLI::App& app);  // __compile, __worker (hidden)

}  // namespace evo
