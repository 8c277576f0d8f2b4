#include "store/regimes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/shape.h"
#include "store/json_fields.h"

namespace evo {

using nlohmann::json;

namespace {

// One candidate's time on one shape, from its newest admitted record that timed the shape.
struct ShapeTime {
  const json* record = nullptr;
  const json* entry = nullptr;
};

struct Kernel {
  const json* newest = nullptr;             // launch, compile key, stage
  std::map<std::string, ShapeTime> shapes;  // shape dims -> time
  long long max_checked_elements = 0;       // the largest tensor of any checked gate case
};

// The population's identity of a candidate: what was compiled, for which task.
std::string identity(const json& r) {
  return string_or(r, "variant") + "|" + (r.contains("params") ? r["params"].dump() : "null") + "|" +
         string_or(r, "task") + "|" + string_or(r, "source_sha256");
}

bool timed(const json& t) {
  const auto m = finite_number(t, "median_us");
  return m && *m > 0 && !string_or(t, "shape").empty();
}

// Shapes come from records of other machines (evo merge): std::regex recurses per character, so
// a text longer than any shape ("65536x65536x65536x1073741824x1073741824x128:bshd") is not parsed.
// Recorded shapes are explicit: the named sets' "H" and "D" are resolved before a record is written.
constexpr size_t kMaxShapeText = 64;
bool explicit_dims(const std::string& dims) {
  return dims.size() <= kMaxShapeText && dims.find_first_of("HD") == std::string::npos;
}

// The elements of the largest tensor of a checked shape, or 0 for one that does not parse.
long long largest_tensor(const std::string& dims) {
  if (!explicit_dims(dims)) return 0;
  try {
    const Shape s = parse_shape(dims, 64);
    return std::max(s.elements(s.heads_q, s.seq_q), s.elements(s.heads_kv, s.seq_kv));
  } catch (const EvoError&) {
    return 0;
  }
}

// Over the passed correctness and post-timing checks of a record.
long long max_checked(const json& r) {
  long long most = 0;
  const json gates = object_or_null(r, "gates");
  for (const char* g : {"correctness", "post_timing"}) {
    const json gate = object_or_null(gates, g);
    if (!gate.is_object() || !gate.contains("checks") || !gate["checks"].is_array()) continue;
    for (const auto& c : gate["checks"])
      if (flag(c, "pass")) most = std::max(most, largest_tensor(string_or(c, "shape")));
  }
  return most;
}

std::map<std::string, Kernel> kernels_of(const std::vector<const json*>& records) {
  std::map<std::string, Kernel> out;
  for (const json* r : records) {
    Kernel& k = out[identity(*r)];
    if (!k.newest || newer_record(*r, *k.newest)) k.newest = r;
    k.max_checked_elements = std::max(k.max_checked_elements, max_checked(*r));
    if (!r->contains("timing") || !(*r)["timing"].is_array()) continue;
    for (const json& t : (*r)["timing"]) {
      if (!timed(t)) continue;
      ShapeTime& st = k.shapes[string_or(t, "shape")];
      if (!st.record || newer_record(*r, *st.record)) st = {r, &t};
    }
  }
  return out;
}

// The regime of a recorded shape, or nullopt for one that does not parse.
std::optional<Regime> shape_regime(const RegimeRule& rule, const std::string& dims) {
  if (!explicit_dims(dims)) return std::nullopt;
  try {
    const Shape s = parse_shape(dims, 64);
    return regime_of(rule, s.batch, s.heads_q, s.seq_q);
  } catch (const EvoError&) {
    return std::nullopt;
  }
}

struct Score {
  double median = 0, p90 = 0;
};

Score geomean(const Kernel& k, const std::set<std::string>& shapes) {
  double lm = 0, lp = 0;
  for (const auto& s : shapes) {
    const json& t = *k.shapes.at(s).entry;
    const double m = number_or(t, "median_us", 0.0);
    lm += std::log(m);
    lp += std::log(std::max(m, number_or(t, "p90_us", m)));
  }
  const double n = double(shapes.size());
  return {std::exp(lm / n), std::exp(lp / n)};
}

json kernel_summary(const Kernel& k) {
  const json& r = *k.newest;
  const json compile = object_or_null(r, "compile");
  json timing = json::array();
  for (const auto& [shape, st] : k.shapes) {
    json t = {{"shape", shape},
              {"median_us", number_or(*st.entry, "median_us", 0.0)},
              {"p90_us", number_or(*st.entry, "p90_us", 0.0)},
              {"run_id", string_or(*st.record, "run_id")}};
    for (const char* extra : {"graph_us", "back_to_back_us"})
      if (auto v = finite_number(*st.entry, extra)) t[extra] = *v;
    timing.push_back(t);
  }
  json s;
  for (const char* f : {"candidate_id", "variant", "stage", "params", "source_path", "source_sha256", "arch"})
    s[f] = r.contains(f) ? r[f] : json(nullptr);
  s["compile_key"] = compile.is_object() && compile.contains("cache_key") ? compile["cache_key"] : json(nullptr);
  s["launch"] = object_or_null(compile, "launch");
  s["timing"] = timing;
  s["max_checked_elements"] = k.max_checked_elements;
  return s;
}

bool covers(const Kernel& k, const std::set<std::string>& shapes) {
  for (const auto& s : shapes)
    if (!k.shapes.count(s)) return false;
  return !shapes.empty();
}

// The fastest kernel timed on every shape: lowest geomean median, then p90, then candidate id.
struct Fastest {
  const Kernel* kernel = nullptr;
  std::string id;
  Score score;
  size_t eligible = 0;
};

Fastest fastest_over(const std::map<std::string, Kernel>& kernels, const std::set<std::string>& shapes) {
  Fastest f;
  for (const auto& [identity_key, k] : kernels) {
    if (!covers(k, shapes)) continue;
    ++f.eligible;
    const Score sc = geomean(k, shapes);
    const std::string cid = string_or(*k.newest, "candidate_id");
    if (!f.kernel || sc.median < f.score.median ||
        (sc.median == f.score.median && (sc.p90 < f.score.p90 || (sc.p90 == f.score.p90 && cid < f.id))))
      f = {&k, cid, sc, f.eligible};
  }
  return f;
}

// One regime's row: its shapes, the fastest kernel timed on all of them, and the choice.
json regime_row(const RegimeRule& rule, Regime regime, const std::map<std::string, Kernel>& kernels,
                const std::string& default_id, std::set<std::string>& used) {
  std::set<std::string> shapes;
  for (const auto& [id, k] : kernels)
    for (const auto& [shape, st] : k.shapes)
      if (shape_regime(rule, shape) == regime) shapes.insert(shape);
  json row = {{"regime", regime_name(regime)}, {"condition", regime_condition(rule, regime)}, {"shapes", shapes}};
  const Fastest best = fastest_over(kernels, shapes);
  row["candidates"] = best.eligible;
  const Kernel* chosen = best.kernel;
  std::string choice = "fastest";
  auto def = default_id.empty() ? kernels.end() : kernels.find(default_id);
  if (!best.kernel) {
    chosen = def == kernels.end() ? nullptr : &def->second;
    choice = "default (unmeasured)";
  } else if (def != kernels.end() && &def->second != best.kernel && covers(def->second, shapes)) {
    const Score d = geomean(def->second, shapes);
    row["default_geomean_median_us"] = d.median;
    if (d.median <= best.score.p90) {  // faster only within the winner's own spread: a tie
      chosen = &def->second;
      choice = "default (tie)";
    }
  }
  if (best.kernel) {
    row["fastest"] = best.id;
    row["fastest_geomean_median_us"] = best.score.median;
    row["fastest_geomean_p90_us"] = best.score.p90;
    const Score c = geomean(*chosen, shapes);
    row["geomean_median_us"] = c.median;
    row["geomean_p90_us"] = c.p90;
  }
  row["choice"] = choice;
  row["kernel"] = chosen ? json(string_or(*chosen->newest, "candidate_id")) : json(nullptr);
  if (chosen) used.insert(identity(*chosen->newest));
  return row;
}

}  // namespace

json regime_rule_json(const RegimeRule& rule) {
  return {{"decode_max_seq_q", rule.decode_max_seq_q},
          {"short_max_seq_q", rule.short_max_seq_q},
          {"batched_min_batch_heads", rule.batched_min_batch_heads}};
}

std::optional<RegimeRule> regime_rule_from_json(const json& j) {
  for (const char* f : {"decode_max_seq_q", "short_max_seq_q", "batched_min_batch_heads"})
    if (!j.is_object() || !j.contains(f) || !j[f].is_number_integer() || j[f].get<long long>() < 1) return std::nullopt;
  RegimeRule r;
  r.decode_max_seq_q = j["decode_max_seq_q"].get<int>();
  r.short_max_seq_q = j["short_max_seq_q"].get<int>();
  r.batched_min_batch_heads = j["batched_min_batch_heads"].get<long long>();
  if (r.short_max_seq_q < r.decode_max_seq_q) return std::nullopt;
  return r;
}

json fastest_elite(const json& population) {
  json best = nullptr;
  if (!population.contains("stages") || !population["stages"].is_object()) return best;
  for (const auto& [stage, elites] : population["stages"].items()) {
    if (!elites.is_array() || elites.empty()) continue;
    const json& e = elites.front();
    const double f = number_or(object_or_null(e, "fitness"), "geomean_median_us", 0.0);
    if (f > 0 && (best.is_null() || f < number_or(best["fitness"], "geomean_median_us", 0.0))) best = e;
  }
  return best;
}

json derive_regimes(const std::vector<const json*>& records, const json& population, const RegimeRule& rule) {
  const auto kernels = kernels_of(records);
  json def = fastest_elite(population);
  std::string default_id;
  if (def.is_object()) {
    def["task"] = string_or(population, "task");
    default_id = identity(def);
  }
  std::set<std::string> used;
  json table = json::array();
  for (Regime r : kAllRegimes) table.push_back(regime_row(rule, r, kernels, default_id, used));
  json list = json::array();
  for (const auto& [id, k] : kernels)
    if (used.count(id)) list.push_back(kernel_summary(k));
  return {{"rule", regime_rule_json(rule)},
          {"default", def.is_object() ? def["candidate_id"] : json(nullptr)},
          {"kernels", list},
          {"table", table}};
}

}  // namespace evo
