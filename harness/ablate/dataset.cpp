#include "ablate/dataset.h"

#include <fmt/format.h>

#include <cmath>

#include "core/errors.h"
#include "core/paths.h"
#include "core/sha256.h"
#include "evolve/evolve_record.h"
#include "search/search_space.h"
#include "search/strategy.h"

namespace evo {

using nlohmann::json;

namespace {

json eval_json(const std::optional<DatasetEval>& e) {
  if (!e) return nullptr;
  json shapes = json::object();
  for (const auto& [s, us] : e->shapes_us) shapes[s] = us;
  return {
      {"outcome", e->outcome}, {"reason", e->reason},           {"fitness_us", e->fitness_us},    {"shapes_us", shapes},
      {"gpu_s", e->gpu_s},     {"deep_gate_s", e->deep_gate_s}, {"candidate_id", e->candidate_id}};
}

// Schema 1 has no deep_gate_s: its gpu_s holds the deep tier where one ran.
DatasetEval eval_from(const json& j, int schema) {
  DatasetEval e;
  if (schema >= 2) e.deep_gate_s = j.at("deep_gate_s").get<double>();
  e.outcome = j.at("outcome").get<std::string>();
  e.reason = j.at("reason").get<std::string>();
  e.fitness_us = j.at("fitness_us").get<double>();
  for (const auto& [s, us] : j.at("shapes_us").items()) e.shapes_us[s] = us.get<double>();
  e.gpu_s = j.at("gpu_s").get<double>();
  e.candidate_id = j.at("candidate_id").get<std::string>();
  return e;
}

// What the run spent and found, for a reader (not read back).
json summary(const Dataset& d) {
  std::map<std::string, int> outcomes;
  double screen_s = 0, full_s = 0, deep_s = 0;
  int screens = 0, fulls = 0, deep = 0;
  for (const auto& c : d.configs) {
    ++outcomes[c.outcome];
    if (c.screen) screen_s += c.screen->gpu_s, ++screens;
    if (c.full) full_s += c.full->gpu_s, ++fulls;
    for (const auto* e : {&c.screen, &c.full})
      if (*e && (*e)->deep_gate_s > 0) deep_s += (*e)->deep_gate_s, ++deep;
  }
  return {{"configs", d.configs.size()}, {"outcomes", outcomes}, {"screened", screens},
          {"screen_gpu_s", screen_s},    {"full", fulls},        {"full_gpu_s", full_s},
          {"deep_gated", deep},          {"deep_gate_s", deep_s}};
}

// The deep tier of a record (phases.deep_gate_s), 0 when it did not run.
double deep_gate_s(const Record& r) { return r.phases ? r.phases->deep_gate_s.value_or(0) : 0; }

DatasetEval eval_of(const Record& r) {
  DatasetEval e;
  e.outcome = to_string(r.outcome);
  e.reason = r.reason.value_or("");
  e.fitness_us = fitness_us(r);
  if (r.timing)
    for (const auto& t : *r.timing)
      if (t.median_us) e.shapes_us[t.shape.value_or("")] = *t.median_us;
  e.deep_gate_s = deep_gate_s(r);
  e.gpu_s = r.gpu_seconds.value_or(0) - e.deep_gate_s;  // gpu_seconds includes the deep tier
  e.candidate_id = r.candidate_id;
  return e;
}

bool before_gpu(const std::string& outcome) {
  return outcome == "constraints" || outcome == "compile" || outcome == "resources" || outcome == "technique" ||
         outcome == "unsupported";
}

}  // namespace

Dataset permuted(const Dataset& d, uint64_t seed) {
  Dataset out = d;
  std::vector<DatasetConfig*> moved;
  for (auto& c : out.configs)
    if (!before_gpu(c.outcome)) moved.push_back(&c);
  std::vector<size_t> order(moved.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  shuffle(order, rng);
  for (size_t i = 0; i < moved.size(); ++i) {
    const DatasetConfig& from = d.configs[size_t(moved[order[i]] - out.configs.data())];
    moved[i]->outcome = from.outcome;
    moved[i]->reason = from.reason;
    moved[i]->screen = from.screen;
    moved[i]->full = from.full;
  }
  return out;
}

namespace {

// The records of one run, checked to be one task on one GPU.
std::vector<const Record*> run_records(const std::vector<Record>& records, const std::string& run) {
  std::vector<const Record*> mine;
  for (const auto& r : records)
    if (r.kind == "run" && evolve_run(r) == run) mine.push_back(&r);
  if (mine.empty()) throw usage_error("--run " + run + ": no record of that evolve run");
  for (const Record* r : mine)
    if (r->task != mine.front()->task || r->gpu_key() != mine.front()->gpu_key())
      throw usage_error("--run " + run + ": its records mix tasks or GPUs");
  return mine;
}

// A configuration from its records (the first screen, the first full evaluation).
DatasetConfig config_of(const SearchVariant& sv, const ParamSet& p, const std::vector<const Record*>& records) {
  DatasetConfig c{sv.variant->id, p, "unmeasured", "", std::nullopt, std::nullopt};
  for (const Record* r : records) {
    const auto entry = evolve_entry(*r);
    const std::string phase = entry ? entry->phase : "";
    if (!reached_gpu(r->outcome))
      c.outcome = to_string(r->outcome), c.reason = r->reason.value_or("");
    else if (phase == "screen" && !c.screen)
      c.screen = eval_of(*r);
    else if (phase == "full" && !c.full)
      c.full = eval_of(*r);
  }
  if (!before_gpu(c.outcome) && (c.screen || c.full)) {
    const DatasetEval& first = c.screen ? *c.screen : *c.full;
    c.outcome = first.outcome, c.reason = first.reason;
  }
  return c;
}

}  // namespace

json to_json(const Dataset& d) {
  json variants = json::array(), configs = json::array();
  for (const auto& v : d.variants) {
    json t = json::array();
    for (const auto& tn : v.tunables) t.push_back({{"name", tn.name}, {"values", tn.values}});
    variants.push_back({{"id", v.id}, {"path", v.path}, {"tunables", t}, {"source", v.source}});
  }
  for (const auto& c : d.configs) {
    json p = json::object();
    for (const auto& [k, x] : c.params) p[k] = x;
    configs.push_back({{"variant", c.variant},
                       {"params", p},
                       {"outcome", c.outcome},
                       {"reason", c.reason},
                       {"screen", eval_json(c.screen)},
                       {"full", eval_json(c.full)}});
  }
  return {{"kind", "evo-dataset"}, {"schema", d.schema}, {"gpu", d.gpu},       {"task", d.task},
          {"stage", d.stage},      {"run", d.run},       {"shapes", d.shapes}, {"summary", summary(d)},
          {"variants", variants},  {"header", d.header}, {"configs", configs}};
}

std::string dataset_text(const Dataset& d) {
  const json j = to_json(d);
  std::string out = "{\n";
  size_t i = 0;
  for (const auto& [k, v] : j.items()) {
    out += json(k).dump() + ": ";
    if (k == "configs") {
      out += "[\n";
      for (size_t c = 0; c < v.size(); ++c) out += "  " + v[c].dump() + (c + 1 < v.size() ? ",\n" : "\n");
      out += "]";
    } else {
      out += v.dump();
    }
    out += ++i < j.size() ? ",\n" : "\n";
  }
  return out + "}\n";
}

Dataset dataset_from_json(const json& j, const std::string& origin) {
  Dataset d;
  std::string field = "kind";
  try {
    if (j.at("kind") != "evo-dataset" || (d.schema = j.at(field = "schema").get<int>()) < 1 ||
        d.schema > kDatasetSchema)
      throw usage_error(fmt::format("{}: not an evo dataset of schema 1 to {}", origin, kDatasetSchema));
    d.gpu = j.at(field = "gpu").get<std::string>();
    d.task = j.at(field = "task").get<std::string>();
    d.stage = j.at(field = "stage").get<int>();
    d.run = j.at(field = "run").get<std::string>();
    d.shapes = j.at(field = "shapes").get<std::vector<std::string>>();
    d.header = j.at(field = "header").get<std::string>();
    for (const auto& v : j.at(field = "variants")) {
      DatasetVariant dv{v.at("id"), v.at("path"), v.at("source"), {}};
      for (const auto& t : v.at("tunables"))
        dv.tunables.push_back({t.at("name"), t.at("values").get<std::vector<long>>()});
      d.variants.push_back(std::move(dv));
    }
    for (const auto& c : j.at(field = "configs")) {
      DatasetConfig dc{c.at("variant"), {}, c.at("outcome"), c.at("reason"), std::nullopt, std::nullopt};
      for (const auto& v : d.variants)  // the variant's order
        if (v.id == dc.variant)
          for (const auto& t : v.tunables) dc.params.emplace_back(t.name, c.at("params").at(t.name).get<long>());
      if (!c.at("screen").is_null()) dc.screen = eval_from(c["screen"], d.schema);
      if (!c.at("full").is_null()) dc.full = eval_from(c["full"], d.schema);
      d.configs.push_back(std::move(dc));
    }
  } catch (const json::exception& e) {
    throw usage_error(fmt::format("{}: field \"{}\" missing or of the wrong type ({})", origin, field, e.what()));
  }
  return d;
}

Dataset read_dataset(const std::filesystem::path& file) {
  try {
    return dataset_from_json(json::parse(read_file(file)), file.string());
  } catch (const json::parse_error& e) {
    throw usage_error(file.string() + ": not valid JSON (" + e.what() + ")");
  }
}

Dataset build_dataset(const std::vector<json>& records, const std::string& run, const std::filesystem::path& root,
                      const Stage& stage) {
  const std::vector<Record> typed = typed_records(records);
  const auto mine = run_records(typed, run);
  Dataset d{mine.front()->gpu_key(), mine.front()->task, run, stage.number, "", {}, {}, {}, kDatasetSchema};
  d.header = read_file(root / "variants" / "common" / "evo_attn.cuh");
  std::map<std::string, std::vector<const Record*>> by_config;
  for (const Record* r : mine) {
    for (const auto& v : stage.variants)
      if (v.id == r->variant && r->source_sha256 != sha256_hex(v.source))
        throw usage_error(
            fmt::format("{} changed since run {}: build the dataset from that run's checkout", v.id, run));
    if (d.shapes.empty() && r->timing && !r->timing->empty())
      for (const auto& t : *r->timing) d.shapes.push_back(t.shape.value_or(""));
  }
  for (const auto& sv : search_space(root, stage, parse_task(d.task))) {
    d.variants.push_back({sv.variant->id, sv.variant->path.string(), sv.variant->source, sv.tunables});
    for (const Record* r : mine)
      if (r->variant == sv.variant->id) by_config[config_key(*sv.variant, aligned(sv, r->params))].push_back(r);
    for (const auto& p : sv.all()) {
      DatasetConfig c = config_of(sv, p, by_config[config_key(*sv.variant, p)]);
      const ConstraintCheck rule = sv.check(p);
      if (c.outcome == "unmeasured" && rule.result == RuleResult::violated)  // never proposed: not compiled
        c.outcome = "constraints", c.reason = fmt::format("{}({}): {} (by the parsed rules)", sv.variant->path.string(),
                                                          rule.rule->line, rule.rule->message);
      d.configs.push_back(std::move(c));
    }
  }
  return d;
}

DatasetUpgrade upgrade_dataset(Dataset& d, const std::vector<json>& records) {
  if (d.schema != 1) throw usage_error(fmt::format("--upgrade: the dataset is of schema {}, not 1", d.schema));
  const std::vector<Record> typed = typed_records(records);
  std::map<std::pair<std::string, std::string>, const Record*> by;  // (candidate, phase) -> the first record
  for (const auto& r : typed)
    if (r.kind == "run" && evolve_run(r) == d.run)
      if (const auto entry = evolve_entry(r)) by.emplace(std::make_pair(r.candidate_id, entry->phase), &r);
  DatasetUpgrade u;
  for (auto& c : d.configs)
    for (auto [e, phase] : {std::make_pair(&c.screen, "screen"), std::make_pair(&c.full, "full")}) {
      if (!*e) continue;
      auto it = by.find({(*e)->candidate_id, phase});
      if (it == by.end()) {
        ++u.unmatched;
        continue;
      }
      const Record& r = *it->second;
      if (std::abs(r.gpu_seconds.value_or(0) - (*e)->gpu_s) > 1e-9)
        throw usage_error(
            fmt::format("--upgrade: the record of {} ({}) cost {} GPU-s, the dataset says {}: not "
                        "the records of run {}",
                        r.candidate_id, phase, r.gpu_seconds.value_or(0), (*e)->gpu_s, d.run));
      ++u.matched;
      (*e)->deep_gate_s = deep_gate_s(r);
      (*e)->gpu_s -= (*e)->deep_gate_s;
      if ((*e)->deep_gate_s > 0) ++u.deep_gated, u.deep_gate_s += (*e)->deep_gate_s;
    }
  d.schema = kDatasetSchema;
  return u;
}

}  // namespace evo
