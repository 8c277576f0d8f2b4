// evo export --task T[,T] [--gpu G] --out DIR: each task's per-regime elites as a self-contained
// package: sources, cubins, a C++ runtime behind a C API, CMake's package config and a PyTorch
// op (docs/deploy.md). Reads populations only; compiles through evo's compiler and cache.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/options.h"
#include "core/errors.h"
#include "export/export_plan.h"
#include "export/package_writer.h"
#include "report/table.h"
#include "store/population.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ExportOptions : StoreDirs, CacheDir {
  std::vector<std::string> tasks;
  std::string gpu, out;
};

// --gpu, or the one GPU with populations; several without --gpu is a usage error naming them.
std::string choose_gpu(const ExportOptions& o) {
  if (!o.gpu.empty()) return o.gpu;
  std::vector<std::string> gpus;
  if (fs::is_directory(o.populations_dir))
    for (const auto& e : fs::directory_iterator(o.populations_dir))
      if (e.is_directory()) gpus.push_back(e.path().filename().string());
  std::sort(gpus.begin(), gpus.end());
  if (gpus.size() == 1) return gpus.front();
  if (gpus.empty())
    throw usage_error(
        fmt::format("no populations under {}: measure the tasks with `evo run` first", o.populations_dir));
  throw usage_error(fmt::format("populations for several GPUs ({}): choose one with --gpu", fmt::join(gpus, ", ")));
}

void print_dispatch(const ExportPlan& plan) {
  TextTable t({"task", "regime", "kernel", "choice", "stage", "variant"});
  for (const auto& task : plan.tasks)
    for (size_t i = 0; i < size_t(kRegimes); ++i) {
      const ExportKernel& k = plan.kernels[size_t(task.kernel[i])];
      t.add({task.task.name(), regime_name(kAllRegimes[i]), k.name, task.choice[i], std::to_string(k.kernel.stage),
             k.kernel.variant});
    }
  std::cout << t.render();
}

void run_export(const ExportOptions& o) {
  if (o.out.empty()) throw usage_error("--out is required: the folder to write the package to");
  const Context ctx = Context::load();
  const std::string gpu = choose_gpu(o);
  std::vector<std::pair<Task, Population>> pops;
  std::vector<std::string> origins;
  for (const auto& name : o.tasks) {
    const Task task = parse_task(name);
    const fs::path file = population_path(o.populations_dir, gpu, task.name(), "default");
    if (!fs::exists(file))
      throw usage_error(fmt::format("--task {}: no population for {} ({}): measure it with `evo run --task {}` first",
                                    task.name(), gpu, file.string(), task.name()));
    pops.emplace_back(task, read_population(file));
    origins.push_back(file.string());
  }
  const ExportPlan plan = plan_export(gpu, pops, origins);
  Compiler compiler(ctx.root, o.cache_path(), ctx.gates);
  const ExportResult result = write_package(ctx, compiler, plan, o.out);
  print_dispatch(plan);
  for (const auto& w : result.warnings) std::cerr << "evo: note: " << w << "\n";
  std::cout << fmt::format(
      "wrote {} files, {} kernels, to {}\nbuild: cmake -S {} -B {}/build && cmake --build {}/build; Python: "
      "PYTHONPATH={}/python, import evo_attn (docs/deploy.md)\n",
      result.files.size(), plan.kernels.size(), o.out, o.out, o.out, o.out, o.out);
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand(
      "export",
      "Write each task's per-regime elites as a C++ library and a PyTorch op (docs/deploy.md); no GPU needed");
  cmd->add_option("--task", o->tasks, "tasks to package, e.g. fp16-d64,fp16-d64-causal")->required()->delimiter(',');
  cmd->add_option("--gpu", o->gpu, "the GPU whose populations to use (gpu_key; default: the only one)");
  cmd->add_option("--out", o->out, "the folder to write (empty, or an earlier export)")->required();
  add_store_dirs(cmd, *o, "records (unused: populations are read)");
  add_cache_dir(cmd, *o);
  cmd->callback([o] { run_export(*o); });
}

}  // namespace evo
