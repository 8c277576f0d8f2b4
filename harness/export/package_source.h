// The one generated file of an exported package, src/package_data.cpp: the kernels' cubins as
// string literals, their launch geometry and TMA specs as evo read them from the cubins, and the
// dispatch table (task x regime -> kernel) the runtime's plan.cpp walks (deploy/runtime/src/package.h).
#pragma once
#include <array>
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
};

std::string package_data_source(const PackageData& data);

// Bytes as C++ string-literal lines (octal escapes for anything but plain printable ASCII), at
// most `width` bytes a line; adjacent literals concatenate.
std::string string_literal_lines(const std::string& bytes, size_t width = 64);
// A C string literal of text (quotes, backslashes and controls escaped).
std::string quoted(const std::string& text);

}  // namespace evo
