// One kernel of an exported package, rebuilt exactly as its records measured it: the source at
// the recorded sha256 (run/elite_source.h), the recorded tunables, compiled through evo's
// compiler and cache for the recorded architecture, with the launch geometry and TMA specs read
// back from the cubin and checked against the record's; PTX beside it where the variant uses
// no architecture-specific instruction (min_sm below 90).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compile/compiler.h"
#include "export/export_plan.h"
#include "run/context.h"
#include "run/elite_source.h"

namespace evo {

struct KernelBuild {
  std::shared_ptr<const EliteSource> source;  // the candidate points at source->variant
  Candidate candidate;
  CompileResult compiled;
  std::string cubin, final_source;
  std::vector<TmaSpec> tma;
  std::optional<std::string> ptx;
  std::string ptx_arch;               // "compute_80" when there is PTX
  std::string ptx_note;               // why there is none
  bool same_compile_key = false;      // the cache key equals the record's (same machine, paths, NVRTC)
  std::vector<std::string> warnings;  // differences worth a look that do not change the kernel
};

// Every kernel of a plan, compiled in parallel (each in its own NVRTC child, cached). Throws a
// usage error naming the kernel when its source is gone, it no longer compiles, or the cubin's
// launch geometry differs from the recorded one.
std::vector<KernelBuild> build_kernels(const Context& ctx, const Compiler& compiler,
                                       const std::vector<ExportKernel>& kernels);

}  // namespace evo
