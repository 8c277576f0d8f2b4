#include "evolve/islands.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <thread>

#include "core/errors.h"
#include "evolve/evolve_record.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/records.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Island::run_id(unsigned island) const { return fmt::format("ev-{}-island{}of{}", group, island, count); }

std::string Island::text() const { return fmt::format("{}/{}", index, count); }

uint64_t Island::seed(uint64_t rng_seed) const {
  // Island 0 keeps the seed as given; the others are spread by an odd constant (splitmix64's),
  // so islands of one seed draw different proposals, and the same again on every rerun.
  return rng_seed + uint64_t(index) * 0x9E3779B97F4A7C15ull;
}

bool Island::in_group(const Record& record) const {
  const std::string run = evolve_run(record);
  const std::string prefix = fmt::format("ev-{}-island", group), suffix = fmt::format("of{}", count);
  return run.size() > prefix.size() + suffix.size() && run.compare(0, prefix.size(), prefix) == 0 &&
         run.compare(run.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Island resolve_island(const std::string& option, const std::string& group, int migrate_every, double wait_s,
                      uint64_t rng_seed, const EnvLookup& env) {
  const Shard part = resolve_part("--island", option, env);
  Island island{part.index, part.count, group, part.source, migrate_every, wait_s};
  if (migrate_every < 0)
    throw usage_error(fmt::format("--migrate-every {}: give a number of generations, 0 for never", migrate_every));
  if (wait_s < 0) throw usage_error("--migrate-wait must not be negative");
  if (island.group.empty()) {
    const char* job = env("SLURM_ARRAY_JOB_ID");
    island.group = job && *job ? fmt::format("slurm{}", job) : fmt::format("seed{}", rng_seed);
  }
  if (island.group.size() > 64 ||
      island.group.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
          std::string::npos)
    throw usage_error("--island-group " + island.group + ": use up to 64 letters, digits, '-', '_' and '.'");
  return island;
}

json Migration::trace() const {
  json ids = json::array();
  for (const auto& m : migrants)
    ids.push_back({{"candidate_id", m.candidate_id}, {"from", evolve_run(m)}, {"fitness_us", fitness_us(m)}});
  return {{"imported", ids}, {"late", late}};
}

int island_progress(const fs::path& trace_file) {
  std::ifstream in(trace_file);
  int done = -1;
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);  // a line being written is skipped
    if (!j.is_object()) continue;
    if (flag(j, "finished")) return std::numeric_limits<int>::max();
    if (j.contains("generation") && j["generation"].is_number_integer())
      done = std::max(done, j["generation"].get<int>());
  }
  return done;
}

std::vector<Record> ranked_full(const std::vector<Record>& records, const MigrationScope& scope) {
  std::vector<Record> out;
  for (const auto& r : records) {
    const auto ev = evolve_entry(r);
    if (ev && ev->phase != "full") continue;  // a quick screen is not a fitness
    if (r.outcome != Outcome::ok || !std::isfinite(fitness_us(r)) || fitness_us(r) <= 0) continue;
    if (r.task != scope.task || r.stage != scope.stage) continue;
    if (r.benchmark.value_or("default") != scope.benchmark) continue;
    if (!scope.gpu_key.empty() && r.gpu_key() != scope.gpu_key) continue;
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const Record& a, const Record& b) {
    const double fa = fitness_us(a), fb = fitness_us(b);
    return fa != fb ? fa < fb : a.candidate_id < b.candidate_id;
  });
  return out;
}

namespace {

// Waits until every other island's trace shows generation `generation - 1` done, at most wait_s.
std::vector<std::string> wait_for_islands(const Island& self, int generation, const fs::path& results_dir) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(self.wait_s);
  std::vector<std::string> late;
  for (unsigned i = 0; i < self.count; ++i) {
    if (i == self.index) continue;
    const fs::path trace = results_dir / "evolve" / (self.run_id(i) + ".trace.jsonl");
    int at = island_progress(trace);
    while (at < generation - 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      at = island_progress(trace);
    }
    if (at < generation - 1)
      late.push_back(fmt::format("island {} had reached generation {} of {} after {:g} s: imported what it had", i, at,
                                 generation - 1, self.wait_s));
  }
  return late;
}

}  // namespace

Migration migrate(const Island& self, int generation, const MigrationScope& scope) {
  Migration m;
  m.late = wait_for_islands(self, generation, scope.results_dir);
  const std::vector<Record> all = typed_records(read_records(scope.results_dir).records);
  std::set<std::string> taken;
  for (unsigned i = 0; i < self.count; ++i) {
    if (i == self.index) continue;
    std::vector<Record> theirs;
    for (const auto& r : all)
      if (const auto ev = evolve_entry(r); ev && ev->run == self.run_id(i) && ev->generation < generation)
        theirs.push_back(r);
    size_t kept = 0;
    for (const auto& r : ranked_full(theirs, scope))
      if (kept < size_t(kElites) && taken.insert(r.candidate_id).second) {
        m.migrants.push_back(r);
        ++kept;
      }
  }
  m.migrants = ranked_full(m.migrants, scope);
  return m;
}

std::vector<Record> island_ranked(const std::vector<Record>& baseline, const std::vector<Record>& own,
                                  const std::vector<Record>& migrants, size_t own_count) {
  std::vector<Record> all;
  std::set<std::string> seen;
  auto add = [&](const Record& r) {
    if (seen.insert(r.candidate_id).second) all.push_back(r);
  };
  for (size_t i = 0; i < baseline.size() && i < size_t(kElites); ++i) add(baseline[i]);
  for (size_t i = 0; i < own.size() && i < own_count; ++i) add(own[i]);
  for (const auto& r : migrants) add(r);
  std::stable_sort(all.begin(), all.end(),
                   [](const Record& a, const Record& b) { return fitness_us(a) < fitness_us(b); });
  return all;
}

}  // namespace evo
