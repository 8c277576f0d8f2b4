// COMPARE.md's "Shape regimes" table: the per-regime elites of a task's population
// (store/regimes.h), the kernel `evo export` dispatches each regime to, and why.
#include <fmt/format.h>

#include <algorithm>

#include "core/param_json.h"
#include "report/compare.h"
#include "report/compare_parts.h"
#include "store/regimes.h"

namespace evo {

using nlohmann::json;
using namespace compare_parts;

namespace {

std::string params_text(const json& params) {
  std::string s;
  if (params.is_object())
    for (const auto& [k, v] : params.items()) s += (s.empty() ? "" : " ") + k + "=" + v.dump();
  return s;
}

RegimeRow regime_row(const RegimeTable& regimes, const RegimeChoice& r) {
  RegimeRow row;
  row.regime = regime_name(r.regime);
  row.condition = r.condition;
  row.choice = r.choice;
  row.shapes = r.shapes;
  if (const RegimeKernel* k = r.kernel ? regimes.kernel(*r.kernel) : nullptr) {
    row.stage = k->stage;
    row.variant = k->variant;
    row.params = params_text(params_json(k->params));
    for (const RegimeKernelTime& t : k->timing)
      if (t.median_us > 0) row.kernel_us[t.shape] = t.median_us;
  }
  row.geomean_us = r.geomean_median_us;
  row.fastest_us = r.fastest_geomean_median_us;
  row.default_us = r.default_geomean_median_us;
  return row;
}

std::string cell_text(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::vector<RegimeRow> regime_rows(const RegimeTable& regimes) {
  std::vector<RegimeRow> rows;
  for (const RegimeChoice& r : regimes.table) rows.push_back(regime_row(regimes, r));
  return rows;
}

void compare_parts::add_regime_peers(std::vector<RegimeRow>& rows, const std::vector<const Record*>& peers) {
  for (auto& row : rows) {
    std::map<std::string, std::vector<double>> ratios;  // per peer, one per shape both ran
    for (const auto& shape : row.shapes) {
      const auto mine = row.kernel_us.find(shape);
      if (mine == row.kernel_us.end()) continue;
      for (const auto& [name, p] : peers_for_shape(shape, peers)) {
        if (p->outcome != Outcome::ok || !p->timing) continue;
        for (const auto& t : *p->timing)
          if (t.shape.value_or("") == shape && t.median_us && *t.median_us > 0) {
            ratios[name].push_back(*t.median_us / mine->second);
            break;
          }
      }
    }
    for (const auto& [name, r] : ratios) {
      row.vs_peer[name] = geomean(r);
      row.vs_peer_shapes[name] = int(r.size());
    }
  }
}

std::string regimes_markdown(const CompareSection& sec) {
  if (sec.regimes.empty()) return "";
  std::string out =
      "\n### Shape regimes\n\nThe kernel `evo export` runs for each shape regime: the fastest kernel that passed the "
      "full gate "
      "and the deep tier, over the regime's measured shapes (geomean median µs); one within its own p90 of the "
      "default kernel (the fastest stage's best deep-gated elite) is a tie and the default keeps the regime; a regime "
      "without measured shapes runs the default; with no deep-gated kernel nothing ships (\"none\") "
      "(measure one: `evo population remeasure --bench regimes` or `--bench models`). × peer: the geomean over "
      "the regime's shapes the peer ran of its median over the chosen kernel's (above 1: the kernel is faster); "
      "\"(k of n)\" when the peer ran k of the n shapes.\n\n";
  // The peers some regime was measured against, in the peer table's order (flash, cuDNN, ...).
  std::vector<std::string> peer_names;
  for (const auto& r : sec.regimes)
    for (const auto& [name, _] : r.vs_peer)
      if (std::find(peer_names.begin(), peer_names.end(), name) == peer_names.end()) peer_names.push_back(name);
  std::stable_sort(peer_names.begin(), peer_names.end(),
                   [](const std::string& a, const std::string& b) { return peer_rank(a) < peer_rank(b); });
  out += "| regime | rule | measured shapes | stage | kernel | geomean µs | fastest µs | default µs | choice |";
  for (const auto& n : peer_names) out += " × " + peer_label(n) + " |";
  out += "\n|---|---|---|---:|---|---:|---:|---:|---|";
  for (size_t i = 0; i < peer_names.size(); ++i) out += "---:|";
  out += "\n";
  for (const auto& r : sec.regimes) {
    std::string shapes;
    for (const auto& s : r.shapes) shapes += (shapes.empty() ? "" : ", ") + s;
    const std::string kernel = r.variant.empty() ? "-" : "`" + r.variant + "` " + r.params;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |", r.regime, cell_text(r.condition),
                       shapes.empty() ? "none" : shapes, r.stage ? std::to_string(*r.stage) : "-", cell_text(kernel),
                       r.geomean_us ? us_text(*r.geomean_us) : "-", r.fastest_us ? us_text(*r.fastest_us) : "-",
                       r.default_us ? us_text(*r.default_us) : "-", r.choice);
    for (const auto& n : peer_names) {
      const auto it = r.vs_peer.find(n);
      std::string cell = "-";
      if (it != r.vs_peer.end()) {
        cell = ratio_text(it->second) + "×";
        const int ran = r.vs_peer_shapes.at(n);
        if (ran < int(r.shapes.size())) cell += fmt::format(" ({} of {})", ran, r.shapes.size());
      }
      out += " " + cell + " |";
    }
    out += "\n";
  }
  return out;
}

json regimes_json(const CompareSection& sec) {
  json rows = json::array();
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  for (const auto& r : sec.regimes)
    rows.push_back({{"regime", r.regime},
                    {"condition", r.condition},
                    {"choice", r.choice},
                    {"shapes", r.shapes},
                    {"stage", r.stage ? json(*r.stage) : json(nullptr)},
                    {"variant", r.variant},
                    {"params", r.params},
                    {"geomean_us", opt(r.geomean_us)},
                    {"fastest_us", opt(r.fastest_us)},
                    {"default_us", opt(r.default_us)},
                    {"vs_peer", r.vs_peer},
                    {"vs_peer_shapes", r.vs_peer_shapes}});
  return rows;
}

}  // namespace evo
