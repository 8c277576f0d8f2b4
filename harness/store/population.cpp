#include "store/population.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/errors.h"
#include "core/leftovers.h"
#include "core/paths.h"
#include "store/atomic_file.h"
#include "store/json_fields.h"
#include "store/regimes.h"
#include "store/typed_record.h"

namespace evo {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool complete_fitness(const Record& r) {
  return r.fitness && r.fitness->complete.value_or(false) && r.fitness->geomean_median_us.has_value();
}

bool sanitized(const Record& r) { return r.gates && r.gates->sanitizer; }

bool sanitizer_passed(const Record& r) { return r.gates->sanitizer->passed(); }

// A reduced gate checks the `small` set alone: `evo eval --quick` (run/plan.cpp
// quick_plan_request) and `evo evolve`'s screen (evolve/screen_plan.cpp). A record that passed one
// proves less than the full gate (mission and ragged shapes, sampled cases), so it is no verdict
// that a kernel is right, and no kernel is exported on its times.
bool full_gate(const Record& r) {
  if (!r.gates || !r.gates->correctness || !r.gates->correctness->checks) return false;
  for (const auto& c : *r.gates->correctness->checks)
    if (c.case_id && c.case_id->rfind("small/", 0) != 0) return true;
  return false;
}

// A verdict on the compiled code: a proof it is wrong or does not do its timed work (on any
// gate: a failing case replays from the record), or an ok from the full gate.
bool wrong(const Record& r) {
  return r.outcome == Outcome::correctness || r.outcome == Outcome::nondeterministic || r.outcome == Outcome::integrity;
}
bool verdict(const Record& r) { return wrong(r) || (r.outcome == Outcome::ok && full_gate(r)); }

// A record as read (its typed view decides) and as written (the elite entry copies from it).
struct ReadRecord {
  const json* raw = nullptr;
  Record rec;
};

// GPU keys and task names become populations/<gpu>/<task>.json: a record naming "../x" must
// not steer a write outside the populations dir.
bool plain_name(const std::string& s) {
  if (s.empty() || s.size() > 128 || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

// Identity of a candidate across runs: what was compiled, for which task.
std::string identity(const Record& r) {
  return r.variant + "|" + r.params.dump() + "|" + r.task + "|" + r.source_sha256;
}

json elite_entry(const json& r, int rank) {
  json e;
  e["rank"] = rank;
  for (const char* k :
       {"candidate_id", "variant", "parent", "source_path", "source_sha256", "params", "fitness", "run_id", "time"})
    e[k] = r.contains(k) ? r[k] : json(nullptr);
  const json compile = object_or_null(r, "compile");
  e["resources"] = object_or_null(compile, "resources");
  e["launch"] = object_or_null(compile, "launch");
  e["technique"] = object_or_null(compile, "technique");
  double max_rel = 0;
  size_t checks = 0, post = 0;
  const json gates = object_or_null(r, "gates");
  for (const char* g : {"correctness", "post_timing"}) {
    const json gate = object_or_null(gates, g);
    if (!gate.is_object() || !gate.contains("checks") || !gate["checks"].is_array()) continue;
    for (const auto& c : gate["checks"]) {
      (std::string(g) == "correctness" ? checks : post)++;
      max_rel = std::max(max_rel, number_or(c, "rel_l2", 0.0));
    }
  }
  e["gates"] = {{"correctness_checks", checks}, {"post_timing_checks", post}, {"max_rel_l2", max_rel}};
  json timing = json::array();
  if (r.contains("timing") && r["timing"].is_array())
    for (const auto& t : r["timing"])
      timing.push_back({{"shape", string_or(t, "shape")},
                        {"median_us", number_or(t, "median_us", 0.0)},
                        {"p90_us", number_or(t, "p90_us", 0.0)},
                        {"tflops", number_or(t, "tflops", 0.0)}});
  e["timing"] = timing;
  return e;
}

void keep_newest(std::map<std::string, ReadRecord>& newest, const std::string& key, const ReadRecord& r) {
  auto it = newest.find(key);
  if (it == newest.end() || !it->second.rec.newer_than(r.rec)) newest[key] = r;
}

// Latest record per candidate identity, per gpu; and the latest one that ran under
// compute-sanitizer, whose verdict belongs to the compiled code, not to one run: a later run
// without --sanitize cannot clear a report, only a later sanitized pass can. So does the latest
// correctness verdict: a kernel shown wrong leaves every benchmark set (a screen's ok does not
// outlive the full gate's correctness failure of the same code), until a later full gate passes.
std::map<std::string, ReadRecord> latest_per_candidate(const std::vector<json>& records) {
  std::map<std::string, ReadRecord> latest, latest_sanitized, latest_verdict;
  for (const auto& j : records) {
    if (j.value("kind", "") != "run") continue;
    RecordRead read = read_record(j);
    if (!read.record) continue;
    ReadRecord r{&j, std::move(*read.record)};
    const std::string gpu = r.rec.gpu_key();
    if (!plain_name(gpu) || !plain_name(r.rec.task)) continue;
    const std::string key = gpu + "|" + identity(r.rec);
    // Per benchmark set: a candidate re-measured on other shapes keeps its place in each set.
    const std::string bench_key = key + "|" + r.rec.benchmark.value_or("default");
    keep_newest(latest, bench_key, r);
    if (sanitized(r.rec)) keep_newest(latest_sanitized, key, r);
    if (verdict(r.rec)) keep_newest(latest_verdict, key, r);
  }
  auto drop = [&](const std::string& key) {
    for (auto it = latest.lower_bound(key + "|"); it != latest.end() && it->first.rfind(key + "|", 0) == 0;)
      it = latest.erase(it);
  };
  for (const auto& [key, r] : latest_sanitized)
    if (!sanitizer_passed(r.rec)) drop(key);
  for (const auto& [key, r] : latest_verdict)
    if (wrong(r.rec)) drop(key);
  return latest;
}

}  // namespace

std::map<std::string, json> derive_populations(const std::vector<json>& records) {
  const std::map<std::string, ReadRecord> latest = latest_per_candidate(records);
  // Group eligible ones by (gpu, task, stage).
  std::map<std::string, std::map<int, std::vector<const ReadRecord*>>> groups;
  // "<gpu>/<task>": every benchmark set's records that passed the full gate (the regimes' pool).
  std::map<std::string, std::vector<const json*>> admitted;
  for (const auto& [key, r] : latest) {
    if (r.rec.outcome != Outcome::ok || !complete_fitness(r.rec)) continue;
    // evo evolve: faster than an elite only within the measured spread is a tie, not a place.
    if (string_or(object_or_null(*r.raw, "evolve"), "admission") == "tie") continue;
    // Fitness is a geomean over one benchmark set: rank only against the same set.
    const std::string bench = r.rec.benchmark.value_or("default");
    if (!plain_name(bench)) continue;
    groups[r.rec.gpu_key() + "/" + r.rec.task + "/" + bench][r.rec.stage].push_back(&r);
    if (full_gate(r.rec)) admitted[r.rec.gpu_key() + "/" + r.rec.task].push_back(r.raw);
  }
  std::map<std::string, json> out;
  for (auto& [gt, stages] : groups) {
    const auto slash = gt.find('/'), slash2 = gt.rfind('/');
    json pop = {{"schema_version", kPopulationSchemaVersion},
                {"gpu", gt.substr(0, slash)},
                {"task", gt.substr(slash + 1, slash2 - slash - 1)},
                {"benchmark", gt.substr(slash2 + 1)},
                {"stages", json::object()}};
    for (auto& [stage, list] : stages) {
      std::sort(list.begin(), list.end(), [](const ReadRecord* a, const ReadRecord* b) {
        const double ma = *a->rec.fitness->geomean_median_us, mb = *b->rec.fitness->geomean_median_us;
        if (ma != mb) return ma < mb;
        const double pa = a->rec.fitness->geomean_p90_us.value_or(0.0),
                     pb = b->rec.fitness->geomean_p90_us.value_or(0.0);
        if (pa != pb) return pa < pb;
        return a->rec.candidate_id < b->rec.candidate_id;
      });
      json elites = json::array();
      for (size_t i = 0; i < list.size() && i < size_t(kElites); ++i)
        elites.push_back(elite_entry(*list[i]->raw, int(i) + 1));
      pop["stages"][std::to_string(stage)] = elites;
    }
    // Key "<gpu>/<task>" for the default benchmark, "<gpu>/<task>@<benchmark>" otherwise.
    const std::string bench = pop["benchmark"].get<std::string>();
    // The per-regime elites (store/regimes.h) over every benchmark set's records of the task.
    if (bench == "default") pop["regimes"] = derive_regimes(admitted[gt.substr(0, slash2)], pop);
    out[gt.substr(0, slash2) + (bench == "default" ? "" : "@" + bench)] = pop;
  }
  return out;
}

fs::path population_path(const fs::path& dir, const std::string& gpu, const std::string& task,
                         const std::string& benchmark) {
  const bool standard = benchmark.empty() || benchmark == "default";
  return dir / gpu / (task + (standard ? "" : "@" + benchmark) + ".json");
}

void write_population(const fs::path& dir, const json& population) {
  const std::string gpu = string_or(population, "gpu"), task = string_or(population, "task");
  if (!plain_name(gpu) || !plain_name(task))
    throw usage_error(fmt::format("population for gpu '{}' task '{}': not plain names, refusing to write under {}",
                                  gpu.substr(0, 64), task.substr(0, 64), dir.string()));
  fs::create_directories(dir);
  FileLock lock(dir / ".lock");
  const fs::path file = population_path(dir, gpu, task, string_or(population, "benchmark"));
  remove_orphaned_temp_files(file.parent_path());  // a killed writer's *.json.tmp.<pid>.<n>
  write_file_atomic(file, population.dump(2) + "\n");
}

json parse_population(const std::string& text, const std::string& origin, std::string* warning) {
  const std::string fix = " (restore it from the logs with `evo population rebuild`)";
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw usage_error(origin + ": not a valid population JSON object" + fix);
  if (!j.contains("schema_version") || !j["schema_version"].is_string())
    throw usage_error(origin + ": missing schema_version" + fix);
  const std::string v = j["schema_version"];
  if (v.rfind("1.", 0) != 0)
    throw usage_error(fmt::format("{}: schema_version {} is not supported by this evo (reads 1.x){}", origin, v, fix));
  if (v != kPopulationSchemaVersion && warning)
    *warning = fmt::format("{}: schema_version {} is newer than this evo's {}; unknown fields are ignored", origin, v,
                           kPopulationSchemaVersion);
  for (const char* k : {"gpu", "task"})
    if (!j.contains(k) || !j[k].is_string()) throw usage_error(fmt::format("{}: field '{}' missing{}", origin, k, fix));
  if (!j.contains("stages") || !j["stages"].is_object()) throw usage_error(origin + ": field 'stages' missing" + fix);
  for (auto& [stage, elites] : j["stages"].items()) {
    if (!elites.is_array()) throw usage_error(fmt::format("{}: stage {} is not a list{}", origin, stage, fix));
    for (const auto& e : elites)
      if (!e.is_object() || !e.contains("variant") || !e.contains("params") || !e.contains("fitness"))
        throw usage_error(
            fmt::format("{}: stage {} has an elite without variant/params/fitness{}", origin, stage, fix));
  }
  return j;
}

json read_population(const fs::path& file, std::string* warning) {
  return parse_population(read_file(file), file.string(), warning);
}

std::vector<json> stage_elites(const json& population, int stage) {
  const std::string key = std::to_string(stage);
  if (!population.contains("stages") || !population["stages"].contains(key)) return {};
  return population["stages"][key].get<std::vector<json>>();
}

}  // namespace evo
