// The comparison as JSON and CSV, for tools rather than readers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.h"
#include "core/outcome.h"
#include "core/paths.h"
#include "core/shape.h"
#include "core/task.h"
#include "report/compare.h"
#include "report/compare_parts.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/record.h"
#include "store/records.h"

namespace evo {

using nlohmann::json;
using namespace compare_parts;

namespace {

json ratio_json(const std::optional<RatioInterval>& r) {
  if (!r) return nullptr;
  return {{"ratio", r->ratio},
          {"lo", r->lo},
          {"hi", std::isfinite(r->hi) ? json(r->hi) : json(nullptr)},
          {"shapes", r->terms}};
}

json opt_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt_json(const std::optional<long>& v) { return v ? json(*v) : json(nullptr); }

json figures_json(const ShapeFigures& f) {
  return {{"shape", f.shape},
          {"median_us", f.sample.median_us},
          {"p10_us", f.p10_us},
          {"p90_us", f.p90_us},
          {"stdev_us", std::isfinite(f.sample.stdev_us) ? json(f.sample.stdev_us) : json(nullptr)},
          {"n", f.sample.n},
          {"rse", opt_json(f.rse)},
          {"tflops", opt_json(f.tflops)},
          {"ceiling_share", opt_json(f.ceiling_share)},
          {"sm_clock_before_mhz", opt_json(f.clock_before_mhz)},
          {"sm_clock_after_mhz", opt_json(f.clock_after_mhz)}};
}

json peer_ratios_json(const std::map<std::string, RatioInterval>& m) {
  json j = json::object();
  for (const auto& [k, v] : m) j[k] = ratio_json(v);
  return j;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_number(std::optional<double> v) { return v ? fmt::format("{}", *v) : ""; }

json stage_json(const StageRow& s) {
  json shapes = json::array();
  for (const auto& row : s.shapes) {
    json f = figures_json(row.figures);
    f["time_vs_prev"] = ratio_json(row.time_vs_prev);
    f["speedup_vs_base"] = ratio_json(row.speedup_vs_base);
    f["speedup_vs_peer"] = peer_ratios_json(row.speedup_vs_peer);
    shapes.push_back(f);
  }
  return {{"stage", s.stage},
          {"variant", s.variant},
          {"candidate_id", s.candidate_id},
          {"run_id", s.run_id},
          {"params", s.params},
          {"geomean_p50_us", s.geomean_p50_us},
          {"geomean_p90_us", s.geomean_p90_us},
          {"prev_stage", s.prev_stage ? json(*s.prev_stage) : json(nullptr)},
          {"time_vs_prev", ratio_json(s.time_vs_prev)},
          {"speedup_vs_base", ratio_json(s.speedup_vs_base)},
          {"speedup_vs_peer", peer_ratios_json(s.speedup_vs_peer)},
          {"registers", opt_json(s.registers)},
          {"smem_bytes", opt_json(s.smem_bytes)},
          {"spill_bytes", opt_json(s.spill_bytes)},
          {"technique", s.technique},
          {"gates", s.gates},
          {"shapes", shapes}};
}

json section_json(const CompareSection& sec) {
  json stages = json::array();
  for (const auto& s : sec.stages) stages.push_back(stage_json(s));
  json peers = json::array();
  for (const auto& p : sec.peers) {
    json shapes = json::array();
    for (const auto& f : p.shapes) shapes.push_back(figures_json(f));
    peers.push_back({{"name", p.name},
                     {"label", p.label},
                     {"versions", p.versions},
                     {"shapes", shapes},
                     {"unsupported", p.unsupported}});
  }
  json failures = json::array();
  for (const auto& f : sec.failures)
    failures.push_back(
        {{"stage", f.stage}, {"outcome", std::string(to_string(f.outcome))}, {"reason", f.reason}, {"count", f.count}});
  return {{"gpu", sec.gpu},
          {"task", sec.task},
          {"ceiling_tflops", opt_json(sec.ceiling_tflops)},
          {"summary", sec.summary},
          {"run_records", sec.run_records},
          {"shapes", sec.shapes},
          {"stages", stages},
          {"peers", peers},
          {"regimes", regimes_json(sec)},
          {"failures", failures},
          {"warnings", sec.warnings}};
}

}  // namespace

std::string render_json(const Comparison& c) {
  json ceilings = json::array();
  for (const auto& g : gpu_ceilings())
    ceilings.push_back(
        {{"gpu", g.gpu_key}, {"fp16_tflops", g.fp16_tflops}, {"bf16_tflops", g.bf16_tflops}, {"source", g.source}});
  json sections = json::array();
  for (const auto& sec : c.sections) sections.push_back(section_json(sec));
  json revoked = json::array();
  for (const auto& r : c.revoked)
    revoked.push_back({{"variant", r.variant},
                       {"source_sha256", r.sources},
                       {"params", r.params},
                       {"reason", r.reason},
                       {"fixed_by", r.fixed_by},
                       {"evidence", r.evidence},
                       {"records", r.records},
                       {"tasks", r.tasks}});
  json out = {{"schema_version", kCompareSchemaVersion},
              {"kind", "compare"},
              {"confidence", c.thresholds.compare.confidence},
              {"run_records", c.run_records},
              {"peer_records", c.peer_records},
              {"record_files", c.record_files},
              {"peer_files", c.peer_files},
              {"ceilings", ceilings},
              {"revoked", revoked},
              {"sections", sections}};
  return out.dump(2) + "\n";
}

std::string render_csv(const Comparison& c) {
  // One row per measured shape of a stage's best candidate or of a peer; the three SDPA
  // backends get fixed speedup columns so the header does not depend on the data.
  const std::vector<std::string> peer_columns = {"pytorch-sdpa-flash", "pytorch-sdpa-cudnn", "pytorch-sdpa-efficient"};
  std::string out =
      "gpu,task,kind,stage,variant,params,shape,median_us,p10_us,p90_us,stdev_us,n,rse,tflops,ceiling_share,"
      "time_vs_prev,speedup_vs_base,speedup_vs_flash,speedup_vs_cudnn,speedup_vs_efficient\n";
  auto base_fields = [](const CompareSection& sec, const std::string& kind, const std::string& stage,
                        const std::string& variant, const std::string& params, const ShapeFigures& f) {
    return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(sec.gpu), csv_field(sec.task), kind,
                       stage, csv_field(variant), csv_field(params), csv_field(f.shape), csv_number(f.sample.median_us),
                       csv_number(f.p10_us), csv_number(f.p90_us),
                       std::isfinite(f.sample.stdev_us) ? csv_number(f.sample.stdev_us) : "", f.sample.n,
                       csv_number(f.rse), csv_number(f.tflops), csv_number(f.ceiling_share));
  };
  auto ratio_field = [](const std::optional<RatioInterval>& r) { return r ? csv_number(r->ratio) : std::string(); };
  for (const auto& sec : c.sections) {
    for (const auto& s : sec.stages)
      for (const auto& row : s.shapes) {
        out += base_fields(sec, "stage", std::to_string(s.stage), s.variant, params_text(s.params), row.figures);
        out += "," + ratio_field(row.time_vs_prev) + "," + ratio_field(row.speedup_vs_base);
        for (const auto& p : peer_columns) {
          auto it = row.speedup_vs_peer.find(p);
          out += "," + (it == row.speedup_vs_peer.end() ? std::string() : csv_number(it->second.ratio));
        }
        out += "\n";
      }
    for (const auto& p : sec.peers)
      for (const auto& f : p.shapes) out += base_fields(sec, "peer", "", "peer/" + p.name, "", f) + ",,,,,\n";
  }
  return out;
}

}  // namespace evo
