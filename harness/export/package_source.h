// The one generated file of an exported package, src/package_data.cpp: the kernels' cubins as
// string literals, their launch geometry and TMA specs as evo read them from the cubins, and the
// dispatch table (task x regime -> kernel) the runtime's plan.cpp walks (deploy/runtime/src/package.h).
#pragma once
#include <array>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "compile/cubin.h"
#include "core/regime.h"
#include "core/task.h"

namespace evo {

struct PackageKernelData {
  std::string name, label, candidate_id;
  std::string cubin;
  LaunchGeometry launch;
  std::vector<TmaSpec> tma;  // empty, or kTmaSlots specs
  long long max_checked_elements = 0;
};

struct PackageTaskData {
  Task task;
  std::array<int, kRegimes> kernel{};
};

struct PackageData {
  std::string gpu;
  int arch = 90;                     // compute capability the cubins are for
  std::string arch_name = "sm_90a";  // what they were compiled for
  RegimeRule rule;
  std::vector<PackageKernelData> kernels;
  std::vector<PackageTaskData> tasks;
  long long sms = 0;  // the SM count the kernels were gated and timed with; 0: unknown (not checked)
};

std::string package_data_source(const PackageData& data);

// The files every package holds besides its kernels and package_data.cpp, by path in the package:
// deploy/ of evo's repository (the C API, runtime, CMake and Python files) as laid out there, and
// the ABI floor, variants/common, as kernels/: the runtime compiles against those copies
// (evo_launch.h, evo_host_launch.h, evo_regime.h), the ones the kernels compiled with. Throws a
// usage error when `root` has no deploy/ folder.
std::map<std::string, std::string> package_runtime_files(const std::filesystem::path& root);

// Bytes as C++ string-literal lines (octal escapes for anything but plain printable ASCII), at
// most `width` bytes a line; adjacent literals concatenate.
std::string string_literal_lines(const std::string& bytes, size_t width = 64);
// A C string literal of text (quotes, backslashes and controls escaped).
std::string quoted(const std::string& text);

}  // namespace evo
