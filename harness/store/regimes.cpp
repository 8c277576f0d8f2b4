#include "store/regimes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/param_json.h"
#include "core/shape.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/typed_record.h"

namespace evo {

using nlohmann::json;

namespace {

// One candidate's time on one shape, from its newest admitted record that timed the shape.
struct ShapeTime {
  const Record* record = nullptr;
  const TimingEntry* entry = nullptr;
};

struct Kernel {
  const Record* newest = nullptr;           // launch, compile key, stage
  std::map<std::string, ShapeTime> shapes;  // shape dims -> time
  long long max_checked_elements = 0;       // the largest tensor of any checked gate case
  std::set<long long> sms;                  // the SM counts its records ran with (0: not recorded)
};

std::string kernel_identity(const Record& r) {
  return candidate_identity(r.variant, r.params, r.task, r.source_sha256);
}

bool timed(const TimingEntry& t) {
  return t.median_us && std::isfinite(*t.median_us) && *t.median_us > 0 && t.shape && !t.shape->empty();
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
long long max_checked(const Record& r) {
  long long most = 0;
  if (!r.gates) return most;
  for (const auto* gate : {&r.gates->correctness, &r.gates->post_timing}) {
    if (!*gate || !(*gate)->checks) continue;
    for (const GateCheck& c : *(*gate)->checks)
      if (c.pass.value_or(false)) most = std::max(most, largest_tensor(c.shape.value_or("")));
  }
  return most;
}

std::map<std::string, Kernel> kernels_of(const std::vector<const Record*>& records) {
  std::map<std::string, Kernel> out;
  for (const Record* r : records) {
    Kernel& k = out[kernel_identity(*r)];
    if (!k.newest || r->newer_than(*k.newest)) k.newest = r;
    k.max_checked_elements = std::max(k.max_checked_elements, max_checked(*r));
    k.sms.insert(r->env ? r->env->sms.value_or(0) : 0);
    if (!r->timing) continue;
    for (const TimingEntry& t : *r->timing) {
      if (!timed(t)) continue;
      ShapeTime& st = k.shapes[*t.shape];
      if (!st.record || r->newer_than(*st.record)) st = {r, &t};
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
    const TimingEntry& t = *k.shapes.at(s).entry;
    const double m = t.median_us.value_or(0.0);
    lm += std::log(m);
    lp += std::log(std::max(m, t.p90_us.value_or(m)));
  }
  const double n = double(shapes.size());
  return {std::exp(lm / n), std::exp(lp / n)};
}

RegimeKernel kernel_summary(const Kernel& k) {
  const Record& r = *k.newest;
  RegimeKernel s;
  for (const auto& [shape, st] : k.shapes) {
    RegimeKernelTime t{shape,
                       st.record->run_id.value_or(""),
                       st.entry->median_us.value_or(0.0),
                       st.entry->p90_us.value_or(0.0),
                       finite_number(st.entry->extra, "graph_us"),
                       finite_number(st.entry->extra, "back_to_back_us")};
    s.timing.push_back(std::move(t));
  }
  s.candidate_id = r.candidate_id;
  s.variant = r.variant;
  s.stage = r.stage;
  s.params = r.params;
  s.source_path = r.source_path;
  s.source_sha256 = r.source_sha256;
  s.arch = r.arch;
  if (r.compile) {
    s.compile_key = r.compile->cache_key;
    s.launch = object_or_null(r.compile->extra, "launch");
  }
  s.max_checked_elements = k.max_checked_elements;
  if (k.sms.size() == 1 && *k.sms.begin() > 0) s.gated_sms = *k.sms.begin();
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
  long long eligible = 0;
};

Fastest fastest_over(const std::map<std::string, Kernel>& kernels, const std::set<std::string>& shapes) {
  Fastest f;
  for (const auto& [identity_key, k] : kernels) {
    if (!covers(k, shapes)) continue;
    ++f.eligible;
    const Score sc = geomean(k, shapes);
    const std::string& cid = k.newest->candidate_id;
    if (!f.kernel || sc.median < f.score.median ||
        (sc.median == f.score.median && (sc.p90 < f.score.p90 || (sc.p90 == f.score.p90 && cid < f.id))))
      f = {&k, cid, sc, f.eligible};
  }
  return f;
}

// One regime's row: its shapes, the fastest kernel timed on all of them, and the choice.
RegimeChoice regime_row(const RegimeRule& rule, Regime regime, const std::map<std::string, Kernel>& kernels,
                        const std::string& default_id, std::set<std::string>& used) {
  std::set<std::string> shapes;
  for (const auto& [id, k] : kernels)
    for (const auto& [shape, st] : k.shapes)
      if (shape_regime(rule, shape) == regime) shapes.insert(shape);
  RegimeChoice row;
  row.regime = regime;
  row.condition = regime_condition(rule, regime);
  row.shapes.assign(shapes.begin(), shapes.end());
  const Fastest best = fastest_over(kernels, shapes);
  row.candidates = best.eligible;
  const Kernel* chosen = best.kernel;
  row.choice = "fastest";
  auto def = default_id.empty() ? kernels.end() : kernels.find(default_id);
  if (!best.kernel) {
    chosen = def == kernels.end() ? nullptr : &def->second;
    row.choice = "default (unmeasured)";
  } else if (def != kernels.end() && &def->second != best.kernel && covers(def->second, shapes)) {
    const Score d = geomean(def->second, shapes);
    row.default_geomean_median_us = d.median;
    if (d.median <= best.score.p90) {  // faster only within the winner's own spread: a tie
      chosen = &def->second;
      row.choice = "default (tie)";
    }
  }
  if (best.kernel) {
    row.fastest = best.id;
    row.fastest_geomean_median_us = best.score.median;
    row.fastest_geomean_p90_us = best.score.p90;
    const Score c = geomean(*chosen, shapes);
    row.geomean_median_us = c.median;
    row.geomean_p90_us = c.p90;
  }
  if (chosen) {
    row.kernel = chosen->newest->candidate_id;
    used.insert(kernel_identity(*chosen->newest));
  } else {
    row.choice = "none (not deep-gated)";  // no kernel of the task passed the deep tier: nothing ships
  }
  return row;
}

}  // namespace

const RegimeKernel* RegimeTable::kernel(const std::string& candidate_id) const {
  for (const auto& k : kernels)
    if (k.candidate_id == candidate_id) return &k;
  return nullptr;
}

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

RegimeTable derive_regimes(const std::vector<const Record*>& records, const Elite* default_kernel,
                           const std::string& task, const RegimeRule& rule) {
  const auto kernels = kernels_of(records);
  std::string default_id;
  RegimeTable t;
  t.rule = rule;
  if (default_kernel) {
    default_id = candidate_identity(default_kernel->variant, default_kernel->params, task,
                                    default_kernel->source_sha256.value_or(""));
    t.default_kernel = default_kernel->candidate_id;
  }
  std::set<std::string> used;
  for (Regime r : kAllRegimes) t.table.push_back(regime_row(rule, r, kernels, default_id, used));
  for (const auto& [id, k] : kernels)
    if (used.count(id)) t.kernels.push_back(kernel_summary(k));
  return t;
}

}  // namespace evo
