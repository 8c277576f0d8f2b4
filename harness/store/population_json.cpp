// The population's one JSON mapping (store/population.h): its writer and its strict reader.
#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "core/errors.h"
#include "core/param_json.h"
#include "store/population.h"
#include "store/strict_fields.h"
#include "store/typed_record_io.h"

namespace evo {

using nlohmann::json;

namespace {

const char* const kFix = " (restore it from the logs with `evo population rebuild`)";

}  // namespace

json elite_json(const Elite& e) {
  json j = e.extra;
  j["rank"] = e.rank;
  for (const auto& [key, v] : {std::pair{"candidate_id", &e.candidate_id}, std::pair{"parent", &e.parent},
                               std::pair{"source_path", &e.source_path}, std::pair{"source_sha256", &e.source_sha256},
                               std::pair{"run_id", &e.run_id}, std::pair{"time", &e.time}})
    j[key] = *v ? json(**v) : json();
  j["variant"] = e.variant;
  j["params"] = params_json(e.params);
  j["fitness"] = record_io::write_fitness(e.fitness);
  j["resources"] = e.resources;
  j["launch"] = e.launch;
  j["technique"] = e.technique;
  j["gates"] = {{"correctness_checks", e.gates.correctness_checks},
                {"post_timing_checks", e.gates.post_timing_checks},
                {"max_rel_l2", e.gates.max_rel_l2}};
  json timing = json::array();
  for (const auto& t : e.timing)
    timing.push_back({{"shape", t.shape}, {"median_us", t.median_us}, {"p90_us", t.p90_us}, {"tflops", t.tflops}});
  j["timing"] = std::move(timing);
  return j;
}

namespace {

// The record's fitness rules (store/record_values.h): geomeans null or > 0, shapes a count.
Fitness read_elite_fitness(StrictFields& elite) {
  const json* v = elite.take("fitness");
  if (!v) elite.fail(elite.field("fitness"), json(json::value_t::discarded), "an object");
  StrictFields f(*v, elite.field("fitness"), elite.file());
  f.time_or_null("geomean_median_us", true);
  f.time_or_null("geomean_p90_us", true);
  f.count_or_absent("shapes");
  return record_io::read_fitness(*v);
}

EliteGates read_elite_gates(StrictFields& elite) {
  const json* v = elite.take("gates");
  if (!v) return {};
  StrictFields f(*v, elite.field("gates"), elite.file());
  EliteGates g;
  g.correctness_checks = f.count("correctness_checks");
  g.post_timing_checks = f.count("post_timing_checks");
  g.max_rel_l2 = f.time("max_rel_l2");
  return g;
}

std::vector<EliteTime> read_elite_timing(StrictFields& elite) {
  const json* v = elite.take("timing");
  if (!v) return {};
  if (!v->is_array()) elite.fail(elite.field("timing"), *v, "a list");
  std::vector<EliteTime> out;
  for (size_t i = 0; i < v->size(); ++i) {
    StrictFields f((*v)[i], fmt::format("{}[{}]", elite.field("timing"), i), elite.file());
    EliteTime t;
    t.shape = f.text("shape");
    t.median_us = f.time("median_us");
    t.p90_us = f.time("p90_us");
    t.tflops = f.time("tflops");
    out.push_back(std::move(t));
  }
  return out;
}

Elite read_elite(const json& j, const std::string& at, const FileContext& file) {
  StrictFields f(j, at, file);
  Elite e;
  if (auto rank = f.count_or_absent("rank")) e.rank = int(*rank);
  e.candidate_id = f.text_or_null("candidate_id");
  e.parent = f.text_or_null("parent");
  e.source_path = f.text_or_null("source_path");
  e.source_sha256 = f.text_or_null("source_sha256");
  e.run_id = f.text_or_null("run_id");
  e.time = f.text_or_null("time");
  e.variant = f.text("variant");
  e.params = f.params("params");
  e.fitness = read_elite_fitness(f);
  e.resources = f.object_or_null("resources");
  e.launch = f.object_or_null("launch");
  e.technique = f.object_or_null("technique");
  e.gates = read_elite_gates(f);
  e.timing = read_elite_timing(f);
  e.extra = std::move(f.rest);
  return e;
}

// A stage's key: the decimal number of a stage, nothing else.
int stage_number(const std::string& key, const FileContext& file) {
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(key.c_str(), &end, 10);
  if (key.empty() || *end != '\0' || errno != 0 || n < 0 || n > INT_MAX || std::to_string(n) != key)
    file.fail(fmt::format("stage '{}' is not a stage number", key.substr(0, 32)));
  return int(n);
}

// The header: version (major 1 only), gpu, task, benchmark.
void read_header(StrictFields& f, Population& p, std::string* warning) {
  const FileContext& file = f.file();
  const json* version = f.take("schema_version");
  if (!version || !version->is_string()) file.fail("missing schema_version");
  const std::string v = version->get<std::string>();
  const auto schema = SchemaVersion::parse(v);
  if (v.rfind("1.", 0) != 0 || !schema)
    file.fail(fmt::format("schema_version {} is not supported by this evo (reads 1.x)", v));
  if (v != kPopulationSchemaVersion && warning)
    *warning = fmt::format("{}: schema_version {} is newer than this evo's {}; unknown fields are ignored", file.origin,
                           v, kPopulationSchemaVersion);
  p.schema = *schema;
  for (const char* k : {"gpu", "task"})
    if (!f.rest.contains(k) || !f.rest[k].is_string()) file.fail(fmt::format("field '{}' missing", k));
  p.gpu = f.text("gpu");
  p.task = f.text("task");
  p.benchmark = f.text_or_null("benchmark");
}

}  // namespace

json population_json(const Population& p) {
  json stages = json::object();
  for (const auto& [stage, elites] : p.stages) {
    json list = json::array();
    for (const auto& e : elites) list.push_back(elite_json(e));
    stages[std::to_string(stage)] = std::move(list);
  }
  json j = p.extra;
  j["schema_version"] = p.schema.text();
  j["gpu"] = p.gpu;
  j["task"] = p.task;
  if (p.benchmark) j["benchmark"] = *p.benchmark;
  j["stages"] = std::move(stages);
  if (p.regimes) j["regimes"] = regime_table_json(*p.regimes);
  return j;
}

Population parse_population(const std::string& text, const std::string& origin, std::string* warning) {
  const FileContext file{origin, kFix};
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) file.fail("not a valid population JSON object");
  StrictFields f(j, "", file);
  Population p;
  read_header(f, p, warning);
  const json* stages = f.take("stages");
  if (!stages || !stages->is_object()) file.fail("field 'stages' missing");
  for (const auto& [key, elites] : stages->items()) {
    if (!elites.is_array()) file.fail(fmt::format("stage {} is not a list", key.substr(0, 32)));
    std::vector<Elite>& list = p.stages[stage_number(key, file)];
    for (size_t i = 0; i < elites.size(); ++i) {
      if (!elites[i].is_object() || !elites[i].contains("variant") || !elites[i].contains("params") ||
          !elites[i].contains("fitness"))
        file.fail(fmt::format("stage {} has an elite without variant/params/fitness", key));
      list.push_back(read_elite(elites[i], fmt::format("stages.{}[{}]", key, i), file));
    }
  }
  if (const json* regimes = f.take("regimes"); regimes && !regimes->is_null()) {
    StrictFields r(*regimes, "regimes", file);
    p.regimes = read_regime_table(r);
  }
  p.extra = std::move(f.rest);
  return p;
}

}  // namespace evo
