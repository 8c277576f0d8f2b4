#include "run/stage_bench.h"

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/paths.h"

namespace evo {

std::vector<std::string> stage_bench_sets(const Context& ctx, const Stage& stage) {
  const fs::path file = ctx.root / stage.dir / "stage.json";
  if (!fs::exists(file)) return {};
  const nlohmann::json j = nlohmann::json::parse(read_file(file), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("bench_sets")) return {};  // core/variant.cpp judges the JSON
  const auto bad = [&] {
    return usage_error(file.string() + ": 'bench_sets' must be an array of shape set names (gates.json shape_sets)");
  };
  if (!j["bench_sets"].is_array()) throw bad();
  std::vector<std::string> out;
  for (const auto& b : j["bench_sets"]) {
    if (!b.is_string() || b.get<std::string>().empty()) throw bad();
    out.push_back(b.get<std::string>());
  }
  return out;
}

std::vector<std::string> bench_sets_for(const Context& ctx, const Stage& stage, const std::vector<std::string>& given) {
  if (!given.empty()) return given;
  std::vector<std::string> own = stage_bench_sets(ctx, stage);
  return own.empty() ? ctx.gates.benchmark_sets : own;
}

}  // namespace evo
