// Populations: the elite top-3 per (gpu, task, stage), a pure function of the records.
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace evo {

inline constexpr const char* kPopulationSchemaVersion = "1.0";
inline constexpr int kElites = 3;

// Derives every population present in the records: key "<gpu_key>/<task>" (default benchmark)
// or "<gpu_key>/<task>@<benchmark>".
std::map<std::string, nlohmann::json> derive_populations(const std::vector<nlohmann::json>& records);

// populations/<gpu>/<task>.json for the default benchmark, <task>@<benchmark>.json otherwise
// (fitness is a geometric mean over one benchmark set, so sets are never ranked together).
std::filesystem::path population_path(const std::filesystem::path& dir, const std::string& gpu, const std::string& task,
                                      const std::string& benchmark);
// Writes the population's file atomically under populations/.lock.
void write_population(const std::filesystem::path& populations_dir, const nlohmann::json& population);

// Reads and validates a population file: refuses another major version, warns (via
// `warning`) on a newer minor. Throws a usage error that names the file and says how to
// restore it (`evo population rebuild`).
nlohmann::json read_population(const std::filesystem::path& file, std::string* warning = nullptr);
nlohmann::json parse_population(const std::string& text, const std::string& origin, std::string* warning = nullptr);

// The elites of one stage of a population (empty if none).
std::vector<nlohmann::json> stage_elites(const nlohmann::json& population, int stage);

}  // namespace evo
