#include "export/kernel_build.h"

#include <fmt/format.h>

#include "compile/compile_set.h"
#include "core/errors.h"
#include "core/param_json.h"
#include "core/paths.h"
#include "store/json_fields.h"

namespace evo {

using nlohmann::json;

namespace {

// The recorded tunables in the variant's declaration order, as `evo run` wrote its #defines.
ParamSet recorded_params(const Variant& v, const ParamSet& params, const std::string& who) {
  ParamSet out;
  for (const Tunable& t : v.params)
    for (const auto& [name, value] : params)
      if (name == t.name) out.emplace_back(name, value);
  if (out.size() != params.size())
    throw usage_error(fmt::format("{}: params {} are not all tunables of {}", who, params_json(params).dump(), v.id));
  return out;
}

void check_launch(const LaunchGeometry& got, const json& recorded, const std::string& who) {
  if (!recorded.is_object()) return;  // older records without it: nothing to compare with
  const auto want = [&](const char* k) { return number_or(recorded, k, -1.0); };
  if (want("threads") != got.threads || want("smem_bytes") != got.smem_bytes ||
      want("rows_per_cta") != got.rows_per_cta || want("cluster_x") != got.cluster_x ||
      want("persistent") != got.persistent)
    throw usage_error(fmt::format(
        "{}: the rebuilt cubin launches {} threads, {} B smem, {} rows, cluster {}, persistent {}; its record says {}: "
        "variants/common changed since it was measured (measure it again with `evo run`)",
        who, got.threads, got.smem_bytes, got.rows_per_cta, got.cluster_x, got.persistent, recorded.dump()));
}

void add_ptx(const Compiler& compiler, KernelBuild& b) {
  const Variant& v = *b.candidate.variant;
  if (v.min_sm >= 90) {
    b.ptx_note = fmt::format("min_sm {}: the variant uses sm_90a-only instructions, so no portable PTX", v.min_sm);
    return;
  }
  b.ptx_arch = fmt::format("compute_{}", v.min_sm);
  Compiler::Ptx p = compiler.compile_ptx(b.candidate, b.ptx_arch);
  if (p.verdict.ok())
    b.ptx = p.text;
  else
    b.ptx_note = fmt::format("NVRTC gave no PTX for {}: {}", b.ptx_arch, p.verdict.reason);
}

std::string who(const ExportKernel& k) { return fmt::format("kernel {} ({})", k.name, k.label()); }

// The recorded source and tunables, as a candidate for the recorded architecture.
KernelBuild prepare(const Context& ctx, const ExportKernel& k) {
  const RegimeKernel& s = k.kernel;
  std::string why;
  auto found = find_elite_source(ctx, {s.variant, s.source_path.value_or(""), s.source_sha256}, &why);
  if (!found) throw usage_error(fmt::format("{}: {}", who(k), why));
  KernelBuild b;
  b.source = std::make_shared<const EliteSource>(std::move(*found));
  const std::string arch = s.arch.value_or("sm_90a");
  b.candidate = Candidate{&b.source->variant, recorded_params(b.source->variant, s.params, who(k)), k.task, arch};
  return b;
}

void finish(const Compiler& compiler, const ExportKernel& k, KernelBuild& b) {
  const RegimeKernel& s = k.kernel;
  if (!b.compiled.verdict.ok() || b.compiled.cubin_path.empty())
    throw usage_error(fmt::format("{}: no longer compiles for {}: {}: {}", who(k), b.candidate.arch,
                                  to_string(b.compiled.verdict.outcome), b.compiled.verdict.reason));
  b.cubin = read_file(b.compiled.cubin_path);
  b.final_source = Compiler::final_source(b.candidate);
  check_launch(*b.compiled.launch, s.launch, who(k));
  std::string why;
  auto tma = read_tma_specs(b.cubin, &why);
  if (!tma) throw usage_error(fmt::format("{}: evo_tma: {}", who(k), why));
  b.tma = *tma;
  const std::string recorded_key = s.compile_key.value_or("");
  b.same_compile_key = b.compiled.key == recorded_key;
  if (!b.same_compile_key)
    b.warnings.push_back(
        fmt::format("{}: compile key {} differs from the record's {} (another machine, toolkit path "
                    "or NVRTC; the source and launch geometry match)",
                    who(k), b.compiled.key.substr(0, 12), recorded_key.substr(0, 12)));
  add_ptx(compiler, b);
}

}  // namespace

std::vector<KernelBuild> build_kernels(const Context& ctx, const Compiler& compiler,
                                       const std::vector<ExportKernel>& kernels) {
  std::vector<KernelBuild> builds;
  std::vector<Candidate> candidates;
  for (const auto& k : kernels) {
    builds.push_back(prepare(ctx, k));
    candidates.push_back(builds.back().candidate);
  }
  std::vector<CompileResult> compiled = compile_all(compiler, candidates, 0);
  for (size_t i = 0; i < builds.size(); ++i) {
    builds[i].compiled = std::move(compiled[i]);
    finish(compiler, kernels[i], builds[i]);
  }
  return builds;
}

}  // namespace evo
