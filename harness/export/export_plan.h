// What `evo export` packages, decided from the populations alone: per task, the kernel of each
// shape regime (the population's "regimes" table, store/regimes.h), each distinct kernel once.
#pragma once
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "core/regime.h"
#include "core/task.h"
#include "store/population.h"

namespace evo {

struct ExportKernel {
  std::string name;                  // "k0", "k1", ... (the package's and manifest's name)
  Task task;                         // what it was compiled and gated for
  RegimeKernel kernel;               // the population's kernel entry (candidate, launch, timing, ...)
  std::vector<std::string> regimes;  // the regimes of its task that dispatch to it
  std::string label() const;         // "fp16-d64 stage 8 8-cluster/cluster CLUSTER=2,..."
};

struct ExportTask {
  Task task;
  std::array<int, kRegimes> kernel{};        // index into ExportPlan::kernels, per regime
  std::array<std::string, kRegimes> choice;  // "fastest", "default (tie)", "default (unmeasured)"
};

struct ExportPlan {
  std::string gpu;
  RegimeRule rule;
  std::vector<ExportKernel> kernels;
  std::vector<ExportTask> tasks;
};

// `populations`: each task with its population (populations/<gpu>/<task>.json, read and checked
// by store/population.h) and the file's name for messages. Throws a usage error naming the file
// when a population has no regimes (written before them: `evo population rebuild`), a regime has
// no kernel, or two populations used different regime rules.
ExportPlan plan_export(const std::string& gpu, const std::vector<std::pair<Task, Population>>& populations,
                       const std::vector<std::string>& origins);

}  // namespace evo
