// `evo export`'s output folder: the elites' sources, cubins (and PTX where portable), the C++
// runtime and C API (deploy/ in evo's repository, copied), the generated kernel table, CMake's
// package config, the Python package, and manifest.json with where every kernel came from
// (docs/deploy.md lists the layout).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "compile/compiler.h"
#include "export/export_plan.h"
#include "run/context.h"

namespace evo {

inline constexpr const char* kExportFormat = "evo-export-1";

struct ExportResult {
  std::vector<std::string> files;     // written, relative to the folder, sorted
  std::vector<std::string> warnings;  // e.g. compile keys that differ from the records'
};

// Throws a usage error when `out` is not empty and not an earlier export, when a package file would
// replace one the earlier export did not write (it never deletes or overwrites what it did not
// write: export/export_folder.h), or when a kernel cannot be rebuilt as recorded (kernel_build.h).
ExportResult write_package(const Context& ctx, const Compiler& compiler, const ExportPlan& plan,
                           const std::filesystem::path& out);

}  // namespace evo
