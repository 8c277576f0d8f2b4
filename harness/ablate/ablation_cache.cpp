#include "ablate/ablation_cache.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "core/paths.h"
#include "core/sha256.h"

namespace evo {

using nlohmann::json;

namespace {

// Only what a hang's price reads (SimDomain::cost).
json limits_json(const Limits& l) {
  return {{"gate_case_s", l.gate_case_s}, {"timing_shape_s", l.timing_shape_s}, {"load_s", l.load_s}};
}

// A run: [replayed, fulls, [[started, gpu_s, value_us], ...]].
json run_json(const SimSummary& s) {
  json improvements = json::array();
  for (const auto& i : s.improvements) improvements.push_back({i.started, i.gpu_s, i.value_us});
  return {s.replayed, s.fulls, improvements};
}

SimSummary run_from(const json& j) {
  SimSummary s;
  s.replayed = j.at(0).get<size_t>(), s.fulls = j.at(1).get<size_t>();
  for (const auto& i : j.at(2))
    s.improvements.push_back({i.at(0).get<double>(), i.at(1).get<double>(), i.at(2).get<double>()});
  return s;
}

// An ablation's figures without its strategies' runs (one line of the file each).
json header_json(const AblationResult& r) {
  return {{"objective", r.objective.shape},
          {"why_objective", r.why_objective},
          {"permuted", r.permuted ? json(*r.permuted) : json(nullptr)},
          {"gpu", r.gpu},
          {"task", r.task},
          {"run", r.run},
          {"stage", r.stage},
          {"configs", r.configs},
          {"feasible", r.feasible},
          {"screened", r.screened},
          {"full", r.full},
          {"unmeasured", r.unmeasured},
          {"ratios", r.ratios},
          {"screen_cost", r.screen_cost},
          {"full_cost", r.full_cost},
          {"deep_gated", r.deep_gated},
          {"deep_gate_s", r.deep_gate_s},
          {"optimum", r.optimum},
          {"optimum_params", r.optimum_params}};
}

AblationResult result_from(const json& j, const std::string& name, const AblationSpec& spec) {
  AblationResult r;
  r.dataset = name;
  r.objective.shape = j.at("objective").get<std::string>();
  r.why_objective = j.at("why_objective").get<std::string>();
  if (!j.at("permuted").is_null()) r.permuted = j.at("permuted").get<uint64_t>();
  r.gpu = j.at("gpu").get<std::string>(), r.task = j.at("task").get<std::string>();
  r.run = j.at("run").get<std::string>(), r.stage = j.at("stage").get<int>();
  r.configs = j.at("configs").get<size_t>(), r.feasible = j.at("feasible").get<size_t>();
  r.screened = j.at("screened").get<size_t>(), r.full = j.at("full").get<size_t>();
  r.unmeasured = j.at("unmeasured").get<size_t>(), r.ratios = j.at("ratios").get<size_t>();
  r.screen_cost = j.at("screen_cost").get<double>(), r.full_cost = j.at("full_cost").get<double>();
  r.deep_gated = j.at("deep_gated").get<size_t>(), r.deep_gate_s = j.at("deep_gate_s").get<double>();
  r.optimum = j.at("optimum").get<double>(), r.optimum_params = j.at("optimum_params").get<std::string>();
  r.spec = spec;
  r.spec.strategies.clear();
  for (const auto& s : j.at("strategies")) {
    StrategyRuns runs{s.at("strategy").get<std::string>(), {}};
    for (const auto& run : s.at("runs")) runs.runs.push_back(run_from(run));
    if (runs.runs.size() != spec.seeds.size())
      throw std::runtime_error(
          fmt::format("{}: {} runs for {} seeds", runs.strategy, runs.runs.size(), spec.seeds.size()));
    r.spec.strategies.push_back(runs.strategy);
    r.strategies.push_back(std::move(runs));
  }
  return r;
}

}  // namespace

json ablation_cache_key(std::string_view dataset_file_bytes, const AblationSpec& spec) {
  const json limits = spec.hang_limits ? json{{"screen", limits_json(spec.hang_limits->screen)},
                                              {"full", limits_json(spec.hang_limits->full)}}
                                       : json(nullptr);
  return {{"dataset_sha256", sha256_hex(dataset_file_bytes)},
          {"simulation", kSimulationVersion},
          {"spec",
           {{"strategies", spec.strategies},
            {"seeds", spec.seeds},
            {"budgets", spec.budgets},
            {"population", spec.population},
            {"within", spec.within},
            {"close", spec.close},
            {"horizon_gpu_s", spec.horizon_gpu_s}}},
          {"hang_limits", limits}};
}

std::filesystem::path ablation_cache_path(const std::filesystem::path& dataset_file) {
  return dataset_file.parent_path().parent_path() / "ablation" / dataset_file.filename();
}

std::string ablation_cache_text(const json& key, const std::vector<AblationResult>& results) {
  std::string out =
      fmt::format("{{\n\"kind\": \"evo-ablation-cache\",\n\"schema\": {},\n\"key\": {},\n\"ablations\": [\n",
                  kAblationCacheSchema, key.dump());
  for (size_t a = 0; a < results.size(); ++a) {
    const std::string header = header_json(results[a]).dump();
    out += header.substr(0, header.size() - 1) + ", \"strategies\": [\n";  // the object left open
    const auto& strategies = results[a].strategies;
    for (size_t s = 0; s < strategies.size(); ++s) {
      json runs = json::array();
      for (const auto& run : strategies[s].runs) runs.push_back(run_json(run));
      out += "  " + json{{"strategy", strategies[s].strategy}, {"runs", runs}}.dump() +
             (s + 1 < strategies.size() ? ",\n" : "\n");
    }
    out += a + 1 < results.size() ? "]},\n" : "]}\n";
  }
  return out + "]\n}\n";
}

std::optional<std::vector<AblationResult>> read_ablation_cache(const std::filesystem::path& file,
                                                               std::string_view dataset_file_bytes,
                                                               const AblationSpec& spec, const std::string& name,
                                                               std::string& why) {
  why.clear();
  if (!std::filesystem::exists(file)) {
    why = "no ablation cache";
    return std::nullopt;
  }
  const json key = ablation_cache_key(dataset_file_bytes, spec);
  try {
    const json j = json::parse(read_file(file));
    if (j.at("kind") != "evo-ablation-cache" || j.at("schema") != kAblationCacheSchema) {
      why = fmt::format("not an ablation cache of schema {}", kAblationCacheSchema);
      return std::nullopt;
    }
    std::string differ;
    for (const auto& [field, value] : key.items())
      if (!j.at("key").contains(field) || j.at("key").at(field) != value)
        differ += (differ.empty() ? "" : ", ") + field;
    if (!differ.empty()) {
      why = "stale (its key differs in " + differ + ")";
      return std::nullopt;
    }
    std::vector<AblationResult> out;
    for (const auto& a : j.at("ablations")) out.push_back(result_from(a, name, spec));
    return out;
  } catch (const std::exception& e) {  // json's errors and a runs count that does not fit the seeds
    why = std::string("unreadable (") + e.what() + ")";
    return std::nullopt;
  }
}

}  // namespace evo
