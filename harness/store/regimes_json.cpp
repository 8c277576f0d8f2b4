// The regime table's one JSON mapping (store/regimes.h): its writer, and its strict reader.
#include <fmt/format.h>

#include <algorithm>

#include "core/param_json.h"
#include "store/regimes.h"
#include "store/strict_fields.h"

namespace evo {

using nlohmann::json;

namespace {

void put_or_null(json& j, const char* key, const std::optional<std::string>& v) { j[key] = v ? json(*v) : json(); }
void put_if(json& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = *v;
}

}  // namespace

json regime_kernel_json(const RegimeKernel& k) {
  json timing = json::array();
  for (const auto& t : k.timing) {
    json e = {{"shape", t.shape}, {"median_us", t.median_us}, {"p90_us", t.p90_us}, {"run_id", t.run_id}};
    put_if(e, "graph_us", t.graph_us);
    put_if(e, "back_to_back_us", t.back_to_back_us);
    timing.push_back(std::move(e));
  }
  json j = k.extra;
  j["candidate_id"] = k.candidate_id;
  j["variant"] = k.variant;
  j["stage"] = k.stage;
  j["params"] = params_json(k.params);
  put_or_null(j, "source_path", k.source_path);
  j["source_sha256"] = k.source_sha256;
  put_or_null(j, "arch", k.arch);
  put_or_null(j, "compile_key", k.compile_key);
  j["launch"] = k.launch;
  j["timing"] = std::move(timing);
  j["max_checked_elements"] = k.max_checked_elements;
  if (k.gated_sms) j["gated_sms"] = *k.gated_sms;
  return j;
}

namespace {

json choice_json(const RegimeChoice& c) {
  json j = c.extra;
  j["regime"] = regime_name(c.regime);
  j["condition"] = c.condition;
  j["shapes"] = c.shapes;
  j["candidates"] = c.candidates;
  put_or_null(j, "kernel", c.kernel);
  j["choice"] = c.choice;
  if (c.fastest) j["fastest"] = *c.fastest;
  put_if(j, "geomean_median_us", c.geomean_median_us);
  put_if(j, "geomean_p90_us", c.geomean_p90_us);
  put_if(j, "fastest_geomean_median_us", c.fastest_geomean_median_us);
  put_if(j, "fastest_geomean_p90_us", c.fastest_geomean_p90_us);
  put_if(j, "default_geomean_median_us", c.default_geomean_median_us);
  return j;
}

RegimeKernelTime read_kernel_time(const json& j, const std::string& at, const FileContext& file) {
  StrictFields f(j, at, file);
  RegimeKernelTime t;
  t.shape = f.text("shape");
  t.run_id = f.text("run_id");
  t.median_us = f.time("median_us");
  t.p90_us = f.time("p90_us");
  t.graph_us = f.time_or_null("graph_us", false);
  t.back_to_back_us = f.time_or_null("back_to_back_us", false);
  return t;
}

// A list field: each element read by `read` at "<field>[i]".
template <typename T, typename Read>
std::vector<T> read_list(StrictFields& f, const char* key, Read read) {
  const json* v = f.take(key);
  if (!v || !v->is_array()) f.fail(f.field(key), v ? *v : json(json::value_t::discarded), "a list");
  std::vector<T> out;
  for (size_t i = 0; i < v->size(); ++i) out.push_back(read((*v)[i], fmt::format("{}[{}]", f.field(key), i)));
  return out;
}

RegimeKernel read_kernel(const json& j, const std::string& at, const FileContext& file) {
  StrictFields f(j, at, file);
  RegimeKernel k;
  k.candidate_id = f.text("candidate_id");
  k.variant = f.text("variant");
  k.stage = int(f.count("stage"));
  k.params = f.params("params");
  k.source_path = f.text_or_null("source_path");
  k.source_sha256 = f.text("source_sha256");
  k.arch = f.text_or_null("arch");
  k.compile_key = f.text_or_null("compile_key");
  k.launch = f.object_or_null("launch");
  k.max_checked_elements = f.count("max_checked_elements");
  k.gated_sms = f.count_or_absent("gated_sms");
  k.timing = read_list<RegimeKernelTime>(
      f, "timing", [&](const json& e, const std::string& where) { return read_kernel_time(e, where, file); });
  k.extra = std::move(f.rest);
  return k;
}

const char* const kChoices[] = {"fastest", "default (tie)", "default (unmeasured)", "none (not deep-gated)"};

RegimeChoice read_choice(const json& j, const std::string& at, const FileContext& file) {
  StrictFields f(j, at, file);
  RegimeChoice c;
  const std::string name = f.text("regime");
  const auto regime = parse_regime(name);
  if (!regime) f.fail(f.field("regime"), name, "one of decode, short, batched-short, long");
  c.regime = *regime;
  c.condition = f.text("condition");
  const json* shapes = f.take("shapes");
  if (!shapes || !shapes->is_array()) f.fail(f.field("shapes"), shapes ? *shapes : json(), "a list of shapes");
  for (const auto& s : *shapes) {
    if (!s.is_string()) f.fail(f.field("shapes"), *shapes, "a list of shapes");
    c.shapes.push_back(s.get<std::string>());
  }
  c.candidates = f.count("candidates");
  c.kernel = f.text_or_null("kernel");
  c.choice = f.text("choice");
  if (std::find(std::begin(kChoices), std::end(kChoices), c.choice) == std::end(kChoices))
    f.fail(f.field("choice"), c.choice, "fastest, default (tie), default (unmeasured) or none (not deep-gated)");
  c.fastest = f.text_or_null("fastest");
  c.geomean_median_us = f.time_or_null("geomean_median_us", true);
  c.geomean_p90_us = f.time_or_null("geomean_p90_us", true);
  c.fastest_geomean_median_us = f.time_or_null("fastest_geomean_median_us", true);
  c.fastest_geomean_p90_us = f.time_or_null("fastest_geomean_p90_us", true);
  c.default_geomean_median_us = f.time_or_null("default_geomean_median_us", true);
  c.extra = std::move(f.rest);
  return c;
}

}  // namespace

json regime_table_json(const RegimeTable& t) {
  json kernels = json::array(), table = json::array();
  for (const auto& k : t.kernels) kernels.push_back(regime_kernel_json(k));
  for (const auto& c : t.table) table.push_back(choice_json(c));
  json j = t.extra;
  j["rule"] = regime_rule_json(t.rule);
  put_or_null(j, "default", t.default_kernel);
  j["kernels"] = std::move(kernels);
  j["table"] = std::move(table);
  return j;
}

RegimeTable read_regime_table(StrictFields& f) {
  const FileContext& file = f.file();
  RegimeTable t;
  const json* rule = f.take("rule");
  const auto parsed = rule ? regime_rule_from_json(*rule) : std::nullopt;
  if (!parsed) file.fail(f.field("rule") + " is missing or malformed");
  t.rule = *parsed;
  t.default_kernel = f.text_or_null("default");
  t.kernels = read_list<RegimeKernel>(
      f, "kernels", [&](const json& e, const std::string& where) { return read_kernel(e, where, file); });
  t.table = read_list<RegimeChoice>(
      f, "table", [&](const json& e, const std::string& where) { return read_choice(e, where, file); });
  if (t.table.size() != size_t(kRegimes))
    file.fail(fmt::format("{} must list the {} regimes", f.field("table"), kRegimes));
  for (size_t i = 0; i < t.table.size(); ++i) {
    const RegimeChoice& c = t.table[i];
    if (c.regime != kAllRegimes[i])
      file.fail(fmt::format("{}[{}] is '{}', not '{}'", f.field("table"), i, regime_name(c.regime),
                            regime_name(kAllRegimes[i])));
    if (c.kernel && !t.kernel(*c.kernel))
      file.fail(fmt::format("regimes name kernel {} but do not list it", *c.kernel));
  }
  t.extra = std::move(f.rest);
  return t;
}

}  // namespace evo
