#include "export/package_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compile/compile_record.h"
#include "core/errors.h"
#include "core/paths.h"
#include "core/sha256.h"
#include "core/version.h"
#include "export/export_folder.h"
#include "export/kernel_build.h"
#include "export/package_source.h"
#include "store/atomic_file.h"
#include "store/json_fields.h"
#include "store/regimes.h"

namespace evo {

using nlohmann::json;

namespace {

// The package's files, gathered before any is written (export/export_folder.h replaces the
// earlier export's files with them and leaves everything else in --out alone).
struct Writer {
  std::map<std::string, std::string> staged;  // relative path -> bytes
  ExportResult result;
  void file(const std::string& rel, const std::string& data) {
    staged[rel] = data;
    result.files.push_back(rel);
  }
};

json kernel_manifest(const ExportKernel& k, const KernelBuild& b) {
  const json s = regime_kernel_json(k.kernel);  // the population's fields, as its file has them
  json tma = json::array();
  for (const TmaSpec& t : b.tma)
    if (t.tensor)
      tma.push_back({{"tensor", std::string(1, "-QKVO"[t.tensor])},
                     {"box_rows", t.box_rows},
                     {"box_cols", t.box_cols},
                     {"swizzle", t.swizzle},
                     {"l2_promotion", t.l2_promotion}});
  const LaunchGeometry& L = *b.compiled.launch;
  json m = {{"name", k.name},
            {"label", k.label()},
            {"task", k.task.name()},
            {"regimes", k.regimes},
            {"source", "kernels/" + k.name + ".cu"},
            {"source_origin", b.source->origin},
            {"cubin", "kernels/" + k.name + ".cubin"},
            {"cubin_sha256", sha256_hex(b.cubin)},
            {"ptx", b.ptx ? json("kernels/" + k.name + ".ptx") : json(nullptr)},
            {"ptx_arch", b.ptx ? json(b.ptx_arch) : json(nullptr)},
            {"ptx_note", b.ptx_note},
            {"compile_key", b.compiled.key},
            {"same_compile_key", b.same_compile_key},
            {"launch", launch_json(L)},
            {"tma", tma}};
  for (const char* f : {"candidate_id", "stage", "variant", "params", "source_path", "source_sha256", "arch",
                        "compile_key", "timing", "max_checked_elements"})
    m[std::string(f) == "compile_key" ? "recorded_compile_key" : f] = s.contains(f) ? s[f] : json(nullptr);
  return m;
}

json task_manifest(const ExportPlan& plan, const ExportTask& t) {
  json dispatch = json::object();
  for (size_t i = 0; i < size_t(kRegimes); ++i)
    dispatch[regime_name(kAllRegimes[i])] = {{"kernel", plan.kernels[size_t(t.kernel[i])].name},
                                             {"choice", t.choice[i]}};
  return {{"task", t.task.name()}, {"dispatch", dispatch}};
}

// The SM count every kernel was gated with (the package refuses a device with another), or 0 when
// some kernel's records do not say (populations written before it was recorded: not checked).
long long gated_sms(const std::vector<ExportKernel>& kernels) {
  for (const ExportKernel& k : kernels)
    if (!k.kernel.gated_sms) return 0;
  for (const ExportKernel& k : kernels)
    if (*k.kernel.gated_sms != *kernels.front().kernel.gated_sms)
      throw usage_error(
          fmt::format("{} was gated on a GPU of {} SMs and {} on one of {}: one package, one SM count "
                      "(export the tasks of each GPU apart)",
                      kernels.front().label(), *kernels.front().kernel.gated_sms, k.label(), *k.kernel.gated_sms));
  return kernels.empty() ? 0 : *kernels.front().kernel.gated_sms;
}

int arch_number(const std::string& arch) {
  // "sm_90a" -> 90; the package's kernels must share one.
  return arch.size() >= 5 && arch.rfind("sm_", 0) == 0 ? std::atoi(arch.substr(3, 2).c_str()) : 0;
}

}  // namespace

ExportResult write_package(const Context& ctx, const Compiler& compiler, const ExportPlan& plan, const fs::path& out) {
  previous_export_files(out);  // a folder that is not an export stops it before the compiles
  const std::vector<KernelBuild> builds = build_kernels(ctx, compiler, plan.kernels);  // before touching --out
  Writer w;
  for (const auto& [rel, data] : package_runtime_files(ctx.root)) w.file(rel, data);
  PackageData data{plan.gpu, 0, "", plan.rule, {}, {}};
  json kernels = json::array(), tasks = json::array();
  for (size_t i = 0; i < builds.size(); ++i) {
    const ExportKernel& k = plan.kernels[i];
    const KernelBuild& b = builds[i];
    const int arch = arch_number(b.candidate.arch);
    if (data.arch && arch != data.arch)
      throw usage_error(fmt::format("kernels for sm_{} and {} cannot share a package", data.arch, b.candidate.arch));
    data.arch = arch;
    data.arch_name = b.candidate.arch;
    w.file("kernels/" + k.name + ".cu", b.final_source);
    w.file("kernels/" + k.name + ".cubin", b.cubin);
    if (b.ptx) w.file("kernels/" + k.name + ".ptx", *b.ptx);
    data.kernels.push_back(
        {k.name, k.label(), k.kernel.candidate_id, b.cubin, *b.compiled.launch, b.tma, k.kernel.max_checked_elements});
    kernels.push_back(kernel_manifest(k, b));
    w.result.warnings.insert(w.result.warnings.end(), b.warnings.begin(), b.warnings.end());
  }
  data.sms = gated_sms(plan.kernels);
  for (const auto& t : plan.tasks) {
    data.tasks.push_back({t.task, t.kernel});
    tasks.push_back(task_manifest(plan, t));
  }
  w.file("src/package_data.cpp", package_data_source(data));
  w.file("manifest.json", "");  // listed in itself: the next export replaces it too
  std::sort(w.result.files.begin(), w.result.files.end());
  const json manifest = {{"format", kExportFormat}, {"evo", evo_version()},
                         {"gpu", plan.gpu},         {"arch", data.arch_name},
                         {"sms", data.sms},         {"rule", regime_rule_json(plan.rule)},
                         {"tasks", tasks},          {"kernels", kernels},
                         {"files", w.result.files}};  // what the next export may replace, and nothing else
  w.staged["manifest.json"] = manifest.dump(2) + "\n";
  replace_export(out, w.staged);
  return w.result;
}

}  // namespace evo
