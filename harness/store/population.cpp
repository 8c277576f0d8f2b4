#include "store/population.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/errors.h"
#include "core/leftovers.h"
#include "core/param_json.h"
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

// GPU keys and task names become populations/<gpu>/<task>.json: a record naming "../x" must
// not steer a write outside the populations dir.
bool plain_name(const std::string& s) {
  if (s.empty() || s.size() > 128 || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

std::string identity(const Record& r) { return candidate_identity(r.variant, r.params, r.task, r.source_sha256); }

Elite elite_of(const Record& r, int rank) {
  Elite e;
  e.rank = rank;
  e.candidate_id = r.candidate_id;
  e.variant = r.variant;
  e.parent = r.parent;
  e.source_path = r.source_path;
  e.source_sha256 = r.source_sha256;
  e.params = r.params;
  e.fitness = *r.fitness;
  e.run_id = r.run_id;
  e.time = r.time;
  if (r.compile) {
    e.resources = object_or_null(r.compile->extra, "resources");
    e.launch = object_or_null(r.compile->extra, "launch");
    e.technique = object_or_null(r.compile->extra, "technique");
  }
  if (r.gates)
    for (const auto* gate : {&r.gates->correctness, &r.gates->post_timing}) {
      if (!*gate || !(*gate)->checks) continue;
      for (const GateCheck& c : *(*gate)->checks) {
        (gate == &r.gates->correctness ? e.gates.correctness_checks : e.gates.post_timing_checks)++;
        e.gates.max_rel_l2 = std::max(e.gates.max_rel_l2, c.rel_l2.value_or(0.0));
      }
    }
  if (r.timing)
    for (const TimingEntry& t : *r.timing)
      e.timing.push_back(
          {t.shape.value_or(""), t.median_us.value_or(0.0), t.p90_us.value_or(0.0), t.tflops.value_or(0.0)});
  return e;
}

void keep_newest(std::map<std::string, const Record*>& newest, const std::string& key, const Record& r) {
  auto it = newest.find(key);
  if (it == newest.end() || !it->second->newer_than(r)) newest[key] = &r;
}

// Latest record per candidate identity, per gpu; and the latest one that ran under
// compute-sanitizer, whose verdict belongs to the compiled code, not to one run: a later run
// without --sanitize cannot clear a report, only a later sanitized pass can. So does the latest
// correctness verdict: a kernel shown wrong leaves every benchmark set (a screen's ok does not
// outlive the full gate's correctness failure of the same code), until a later full gate passes.
std::map<std::string, const Record*> latest_per_candidate(const std::vector<const Record*>& records) {
  std::map<std::string, const Record*> latest, latest_sanitized, latest_verdict;
  for (const Record* record : records) {
    const Record& r = *record;
    const std::string gpu = r.gpu_key();
    if (!plain_name(gpu) || !plain_name(r.task)) continue;
    const std::string key = gpu + "|" + identity(r);
    // Per benchmark set: a candidate re-measured on other shapes keeps its place in each set.
    const std::string bench_key = key + "|" + r.benchmark.value_or("default");
    keep_newest(latest, bench_key, r);
    if (sanitized(r)) keep_newest(latest_sanitized, key, r);
    if (verdict(r)) keep_newest(latest_verdict, key, r);
  }
  auto drop = [&](const std::string& key) {
    for (auto it = latest.lower_bound(key + "|"); it != latest.end() && it->first.rfind(key + "|", 0) == 0;)
      it = latest.erase(it);
  };
  for (const auto& [key, r] : latest_sanitized)
    if (!sanitizer_passed(*r)) drop(key);
  for (const auto& [key, r] : latest_verdict)
    if (wrong(*r)) drop(key);
  return latest;
}

// What ships must have passed the deep tier (gates.json deep_gate: the covering array, large work,
// two streams): a kernel exported into a model meets inputs the sampled gate never draws. Like
// the sanitizer's, the verdict belongs to the compiled code, not to one benchmark set: one passing
// record of the candidate suffices, and a later failure drops the candidate everywhere (wrong()).
std::set<std::string> deep_gated(const std::vector<const Record*>& records) {
  std::set<std::string> out;
  for (const Record* r : records)
    if (r->gates && r->gates->deep && r->gates->deep->pass.value_or(false))
      out.insert(r->gpu_key() + "|" + identity(*r));
  return out;
}

// Ranked by fitness: median geomean, then p90 geomean, then candidate id.
bool fitter(const Record* a, const Record* b) {
  const double ma = *a->fitness->geomean_median_us, mb = *b->fitness->geomean_median_us;
  if (ma != mb) return ma < mb;
  const double pa = a->fitness->geomean_p90_us.value_or(0.0), pb = b->fitness->geomean_p90_us.value_or(0.0);
  if (pa != pb) return pa < pb;
  return a->candidate_id < b->candidate_id;
}

}  // namespace

std::map<std::string, Population> derive_populations(const std::vector<json>& records) {
  std::vector<Record> typed;
  for (const auto& j : records) {
    if (j.value("kind", "") != "run") continue;
    if (RecordRead read = read_record(j); read.record) typed.push_back(std::move(*read.record));
  }
  std::vector<const Record*> all;
  for (const Record& r : typed) all.push_back(&r);
  return derive_typed_populations(all);
}

std::map<std::string, Population> derive_typed_populations(const std::vector<const Record*>& records) {
  std::vector<const Record*> typed;  // the runs: a compile record never places
  for (const Record* r : records)
    if (r->kind == "run") typed.push_back(r);
  const std::map<std::string, const Record*> latest = latest_per_candidate(typed);
  const std::set<std::string> deep = deep_gated(typed);
  // Group eligible ones by (gpu, task, benchmark), then stage.
  std::map<std::string, std::map<int, std::vector<const Record*>>> groups;
  // "<gpu>/<task>": every benchmark set's records that passed the full gate and whose code passed
  // the deep tier (the regimes' pool: what `evo export` ships).
  std::map<std::string, std::vector<const Record*>> admitted;
  for (const auto& [key, r] : latest) {
    if (r->outcome != Outcome::ok || !complete_fitness(*r)) continue;
    // evo evolve: faster than an elite only within the measured spread is a tie, not a place.
    if (string_or(object_or_null(r->extra, "evolve"), "admission") == "tie") continue;
    // Fitness is a geomean over one benchmark set: rank only against the same set.
    const std::string bench = r->benchmark.value_or("default");
    if (!plain_name(bench)) continue;
    groups[r->gpu_key() + "/" + r->task + "/" + bench][r->stage].push_back(r);
    if (full_gate(*r) && deep.count(r->gpu_key() + "|" + identity(*r)))
      admitted[r->gpu_key() + "/" + r->task].push_back(r);
  }
  std::map<std::string, Population> out;
  for (auto& [gt, stages] : groups) {
    const auto slash = gt.find('/'), slash2 = gt.rfind('/');
    Population pop;
    pop.schema = *SchemaVersion::parse(kPopulationSchemaVersion);
    pop.gpu = gt.substr(0, slash);
    pop.task = gt.substr(slash + 1, slash2 - slash - 1);
    pop.benchmark = gt.substr(slash2 + 1);
    for (auto& [stage, list] : stages) {
      std::sort(list.begin(), list.end(), fitter);
      std::vector<Elite>& elites = pop.stages[stage];
      for (size_t i = 0; i < list.size() && i < size_t(kElites); ++i) elites.push_back(elite_of(*list[i], int(i) + 1));
    }
    // Key "<gpu>/<task>" for the default benchmark, "<gpu>/<task>@<benchmark>" otherwise.
    const bool standard = *pop.benchmark == "default";
    // The per-regime elites (store/regimes.h) over every benchmark set's records of the task; the
    // default kernel, too, only among what passed the deep tier.
    if (standard) {
      const Elite* default_kernel = pop.fastest_elite([&](const Elite& e) {
        return deep.count(pop.gpu + "|" +
                          candidate_identity(e.variant, e.params, pop.task, e.source_sha256.value_or("")));
      });
      pop.regimes = derive_regimes(admitted[gt.substr(0, slash2)], default_kernel, pop.task);
    }
    out[gt.substr(0, slash2) + (standard ? "" : "@" + *pop.benchmark)] = std::move(pop);
  }
  return out;
}

fs::path population_path(const fs::path& dir, const std::string& gpu, const std::string& task,
                         const std::string& benchmark) {
  const bool standard = benchmark.empty() || benchmark == "default";
  return dir / gpu / (task + (standard ? "" : "@" + benchmark) + ".json");
}

void write_population(const fs::path& dir, const Population& population) {
  if (!plain_name(population.gpu) || !plain_name(population.task))
    throw usage_error(fmt::format("population for gpu '{}' task '{}': not plain names, refusing to write under {}",
                                  population.gpu.substr(0, 64), population.task.substr(0, 64), dir.string()));
  fs::create_directories(dir);
  FileLock lock(dir / ".lock");
  const fs::path file = population_path(dir, population.gpu, population.task, population.benchmark.value_or(""));
  remove_orphaned_temp_files(file.parent_path());  // a killed writer's *.json.tmp.<pid>.<n>
  const std::string text = population_json(population).dump(2) + "\n";
  // A session refreshes every population of its GPU after each evaluation, and most stay as they
  // were: an fsync'd rewrite of each cost 0.5-0.75 s per evaluation at 64 files (this CPU).
  std::error_code ec;
  if (fs::file_size(file, ec) == text.size() && !ec && read_file(file) == text) return;
  write_file_atomic(file, text);
}

std::vector<fs::path> remove_underived_populations(const fs::path& dir,
                                                   const std::map<std::string, Population>& derived) {
  std::vector<fs::path> removed;
  if (!fs::is_directory(dir)) return removed;
  FileLock lock(dir / ".lock");
  for (const auto& gpu : fs::directory_iterator(dir)) {
    if (!gpu.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(gpu.path())) {
      if (!f.is_regular_file() || f.path().extension() != ".json") continue;
      // populations/<gpu>/<task>[@<benchmark>].json is derive_populations's key <gpu>/<task>[@<benchmark>].
      if (derived.count(gpu.path().filename().string() + "/" + f.path().stem().string())) continue;
      fs::remove(f.path());
      removed.push_back(f.path());
    }
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

Population read_population(const fs::path& file, std::string* warning) {
  return parse_population(read_file(file), file.string(), warning);
}

std::vector<Elite> stage_elites(const Population& population, int stage) {
  auto it = population.stages.find(stage);
  return it == population.stages.end() ? std::vector<Elite>{} : it->second;
}

const Elite* Population::fastest_elite(const std::function<bool(const Elite&)>& eligible) const {
  // In the order of the file's keys ("10" before "2"): the first of equal fitnesses wins.
  std::map<std::string, const Elite*> firsts;
  for (const auto& [stage, elites] : stages) {
    const auto it =
        std::find_if(elites.begin(), elites.end(), [&](const Elite& e) { return !eligible || eligible(e); });
    if (it != elites.end()) firsts[std::to_string(stage)] = &*it;
  }
  const Elite* best = nullptr;
  for (const auto& [key, e] : firsts) {
    const double f = e->fitness_us();
    if (f > 0 && (!best || f < best->fitness_us())) best = e;
  }
  return best;
}

}  // namespace evo
