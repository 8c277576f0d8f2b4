#include "core/param_json.h"

#include <climits>

namespace evo {

using nlohmann::json;

json params_json(const ParamSet& params) {
  json p = json::object();
  for (const auto& [k, v] : params) p[k] = v;
  return p;
}

std::optional<ParamSet> params_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  ParamSet p;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_number_integer()) return std::nullopt;
    // An unsigned beyond long's range would come back negative: not a tunable evo wrote.
    if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(LONG_MAX))
      return std::nullopt;
    p.emplace_back(k, v.get<long>());
  }
  return p;
}

std::string candidate_identity(const std::string& variant, const ParamSet& params, const std::string& task,
                               const std::string& source_sha256) {
  return variant + "|" + params_json(params).dump() + "|" + task + "|" + source_sha256;
}

}  // namespace evo
