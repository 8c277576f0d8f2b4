#include "search/transfer.h"

#include <algorithm>
#include <set>

#include "search/strategy.h"
#include "search/surrogate.h"

namespace evo {

TransferPrior::TransferPrior(std::string origin, std::vector<TransferPoint> points)
    : origin_(std::move(origin)), points_(std::move(points)) {}

std::map<std::string, double> TransferPrior::means(const std::vector<SearchVariant>& space,
                                                   const std::vector<Config>& feasible) const {
  std::map<std::string, double> measured;
  std::vector<GpPoint> points;
  std::vector<double> y;
  std::set<int> groups;  // the variants of `space` the other domain measured
  for (const auto& tp : points_)
    for (const auto& sv : space) {
      if (sv.variant->id != tp.variant) continue;
      const ParamSet p = aligned(sv, tp.params);
      measured[config_key(*sv.variant, p)] = tp.log_ratio;
      points.push_back(rank_point(space, sv, p));
      y.push_back(tp.log_ratio);
      groups.insert(points.back().group);
    }
  std::map<std::string, double> out;
  if (points.empty()) return out;
  GaussianProcess gp;
  gp.fit(points, y);
  for (const auto& c : feasible) {
    const std::string key = config_key(*c.sv->variant, c.params);
    const GpPoint at = rank_point(space, *c.sv, c.params);
    if (const auto it = measured.find(key); it != measured.end())
      out[key] = it->second;
    else if (groups.count(at.group))
      out[key] = gp.predict(at).mean;
  }
  return out;
}

}  // namespace evo
