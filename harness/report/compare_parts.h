// Pieces shared by the comparison's builder (compare.cpp) and its renderers (compare_render.cpp,
// compare_data.cpp): figures from records (typed: store/typed_record.h), ratios, labels.
// Internal to the report layer.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/task.h"
#include "report/compare.h"
#include "store/typed_record.h"

namespace evo::compare_parts {

using nlohmann::json;

struct TaskFacts {
  std::string dtype;
  std::optional<Task> task;  // unset for a task name this evo does not know
};

TaskFacts task_facts(const std::string& name);
std::optional<ShapeFigures> figures_from_timing(const TimingEntry& t, const TaskFacts& facts,
                                                std::optional<double> ceiling);
std::vector<ShapeFigures> timing_figures(const Record& r, const TaskFacts& facts, std::optional<double> ceiling);
const ShapeFigures* find_shape(const std::vector<ShapeFigures>& list, const std::string& shape);
double geomean(const std::vector<double>& v);
std::optional<RatioInterval> common_ratio(const std::vector<ShapeFigures>& a, const std::vector<ShapeFigures>& b,
                                          double confidence);
std::string peer_label(const std::string& name);
int peer_rank(const std::string& name);
// Seconds since the epoch of a record time "YYYY-MM-DDTHH:MM:SSZ"; nullopt when it does not read.
std::optional<long long> epoch_seconds(const std::string& iso);
// Per peer name, the peer record that mentions `shape` (its "shape", or a timing entry's): the
// latest, or with `near` (a record time) the one nearest to it in time.
std::map<std::string, const Record*> peers_for_shape(const std::string& shape, const std::vector<const Record*>& peers,
                                                     const std::string& near = "");
// Each regime row's speed against the peers timed on all of its shapes (RegimeRow::vs_peer).
void add_regime_peers(std::vector<RegimeRow>& rows, const std::vector<const Record*>& peers);
std::string gates_summary(const Record& r, const Record* sanitized = nullptr, const Record* deep_gated = nullptr);
std::optional<long> integer(const json& j, const char* key);
void fill_resources(const Record& r, StageRow& row);
std::string ratio_text(double r);
std::string us_text(double us);  // 3 significant figures or more: 9.87, 658.0, 3810
// A signed percentage without the "-0.0" that rounding leaves for tiny negative changes.
std::string signed_percent(double fraction);
std::string who(const StageRow& s);
std::string params_text(const json& params);

}  // namespace evo::compare_parts
