// The request as Markdown: what a person (or a chat model) reads.
#include <fmt/format.h>

#include "evolve/request.h"
#include "store/json_fields.h"

namespace evo {

using nlohmann::json;

namespace {

std::string params_line(const json& p) {
  std::string s;
  if (p.is_object())
    for (auto& [k, v] : p.items()) s += (s.empty() ? "" : " ") + k + "=" + v.dump();
  return s.empty() ? "(defaults)" : s;
}

void task_section(std::string& md, const json& i1) {
  md += "## I1 — the task\n\n" + i1.value("semantics", "") + "\n\n";
  md += fmt::format("- GPU: {}\n- fitness: {}\n", i1.value("gpu", ""), i1.value("fitness", ""));
  for (const char* k : {"gate", "benchmark"}) {
    std::string list;
    for (const auto& s : i1["shapes"][k]) list += (list.empty() ? "" : ", ") + s.get<std::string>();
    md += fmt::format("- {} shapes (BxHqxHkvxSqxSkvxD): {}\n", k, list);
  }
  for (auto& [arch, c] : i1["resource_caps"].items())
    md += fmt::format("- {} caps: {} registers, {} B shared memory, {} threads\n", arch, c["max_registers"].dump(),
                      c["max_smem_bytes"].dump(), c["max_threads"].dump());
  for (const auto& sv : i1["search_space"]) {
    md += fmt::format("- search space of {}: {} ({} configs, {} allowed by its rules)\n",
                      sv["variant"].get<std::string>(), sv["tunables"].dump(), sv["configs"].dump(),
                      sv.value("feasible_configs", json()).dump());
    for (const auto& r : sv.value("constraints", json::array()))
      md += fmt::format("  - `EVO_CONSTRAINT({})` (line {}): {}\n", r.value("rule", ""), r.value("line", 0),
                        r.value("message", ""));
    if (!sv.value("macros", json::object()).empty()) md += "  - macros the rules use: " + sv["macros"].dump() + "\n";
  }
  md += "\n<details><summary>ABI headers variants/common/evo_attn.cuh and evo_launch.h</summary>\n\n```cuda\n" +
        i1.value("abi_header", "") + "\n```\n</details>\n\n";
}

std::string source_block(const json& sources, const json& entry) {
  const std::string sha = entry.value("source_sha256", "");
  if (sha.empty() || !sources.contains(sha)) return "(source not available)\n\n";
  return "```cuda\n" + sources[sha].get<std::string>() + "\n```\n\n";
}

void elites_section(std::string& md, const json& i2, const json& sources) {
  md += "## I2 — the elites\n\n";
  if (i2["elites"].empty()) md += "No elite yet for this GPU, task and stage: the stage's variants follow.\n\n";
  for (const auto& v : i2.value("variants", json::array()))
    md += fmt::format("### {} (tunables {})\n\n", v.value("variant", ""), v["tunables"].dump()) +
          source_block(sources, v);
  int rank = 1;
  for (const auto& e : i2["elites"]) {
    std::string lin;
    for (const auto& id : e["lineage"]) lin += (lin.empty() ? "" : " ← ") + id.get<std::string>();
    md += fmt::format("### {}. {} {} — {:.2f} µs\n\n- lineage: {}\n", rank++, e.value("variant", ""),
                      params_line(e["params"]), number_or(object_or_null(e, "fitness"), "geomean_median_us", 0), lin);
    for (const auto& t : e["timing"])
      md += fmt::format("- {}: median {:.2f} µs, {:.0f} TFLOPS\n", string_or(t, "shape"), number_or(t, "median_us", 0),
                        number_or(t, "tflops", 0));
    if (e["resources"].is_object()) md += "- resources: " + e["resources"].dump() + "\n";
    if (e.contains("source_note")) md += "- note: " + e["source_note"].get<std::string>() + "\n";
    md += "\n" + source_block(sources, e);
  }
}

void insight_section(std::string& md, const json& i3) {
  md += "## I3 — insights\n\n";
  for (auto& [k, v] : i3["stage_notes"].items())
    if (v.is_string()) md += fmt::format("- **{}**: {}\n", k, v.get<std::string>());
  for (const auto& d : i3["deltas"])
    md += fmt::format("- measured: {} → {} ({} → {}): {:.2f} → {:.2f} µs ({})\n", d["parent"].get<std::string>(),
                      d["child"].get<std::string>(), params_line(d["parent_params"]), params_line(d["child_params"]),
                      d["parent_us"].get<double>(), d["child_us"].get<double>(), d["change"].get<std::string>());
  md += "- profiles: " + (i3["profiles"].is_string() ? i3["profiles"].get<std::string>() : i3["profiles"].dump()) +
        "\n\n";
}

void run_section(std::string& md, const json& run, const json& history) {
  md += fmt::format(
      "## This run\n\n- run {}, generation {}; {} candidate(s) wanted; {} generation(s) left; GPU-s spent {}, left "
      "{}\n",
      run.value("id", ""), run["generation"].dump(), run["wanted"].dump(), run["generations_left"].dump(),
      run["gpu_s_spent"].dump(), run["gpu_s_left"].dump());
  for (const auto& h : history) {
    const std::string fit = h["fitness_us"].is_number() ? fmt::format(" {:.2f} µs", h["fitness_us"].get<double>()) : "";
    md += fmt::format("- gen {} `{}` {} {}: {}{}\n", h["generation"].dump(), h.value("candidate_id", ""),
                      h.value("variant", ""), params_line(h["params"]), h.value("outcome", ""), fit);
  }
  md += "\n";
}

void failures_section(std::string& md, const json& failures) {
  md += "## Recent failures (fix these first)\n\n";
  if (failures.empty()) md += "None.\n\n";
  for (const auto& f : failures) {
    md += fmt::format("- `{}` {} {}: **{}** — {}\n", f.value("candidate_id", ""), f.value("variant", ""),
                      params_line(f.value("params", json::object())), f.value("outcome", ""), f.value("reason", ""));
    if (f.contains("failing_case")) md += "  - failing case: " + f["failing_case"].dump() + "\n";
    if (f.contains("compile_log")) md += "\n```\n" + f["compile_log"].get<std::string>() + "\n```\n";
  }
  md += "\n";
}

}  // namespace

std::string request_markdown(const json& r) {
  std::string md = fmt::format("# evo request: {} stage {} ({}), operator {}\n\n", r.value("task", ""),
                               r["stage"]["number"].get<int>(), r["stage"].value("title", ""), r.value("operator", ""));
  task_section(md, r["i1"]);
  if (r.contains("run")) run_section(md, r["run"], r["history"]);
  if (r.contains("i2")) elites_section(md, r["i2"], r.value("sources", json::object()));
  if (r.contains("i3")) insight_section(md, r["i3"]);
  failures_section(md, r["failures"]);
  md += "## Answer with\n\n```json\n" + r.value("answer_with", "") + "\n```\n";
  return md;
}

}  // namespace evo
