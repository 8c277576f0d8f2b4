#include "core/candidate.h"

#include <algorithm>

#include "core/sha256.h"

namespace evo {

std::string param_set_text(const ParamSet& params) {
  std::string s;
  for (const auto& [k, v] : params) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

std::string Candidate::params_text() const { return params.empty() ? "(defaults)" : param_set_text(params); }

std::string Candidate::id() const {
  Sha256 h;
  h.update(variant->id).update("\n").update(params_text()).update("\n").update(task.name()).update("\n");
  h.update(sha256_hex(variant->source));
  return h.hex().substr(0, 16);
}

std::vector<ParamSet> expand_params(const Variant& v) {
  std::vector<ParamSet> out{ParamSet{}};
  for (const auto& t : v.params) {
    std::vector<ParamSet> next;
    for (const auto& partial : out)
      for (long value : t.values) {
        ParamSet p = partial;
        p.emplace_back(t.name, value);
        next.push_back(std::move(p));
      }
    out = std::move(next);
  }
  return out;
}

ParamSet default_params(const Variant& v) {
  ParamSet p;
  for (const auto& t : v.params) p.emplace_back(t.name, t.values.front());
  return p;
}

ParamSet carry_params(const Variant& v, const ParamSet& base) {
  ParamSet p;
  for (const auto& t : v.params) {
    long value = t.values.front();
    for (const auto& [name, bv] : base)
      if (name == t.name && std::find(t.values.begin(), t.values.end(), bv) != t.values.end()) value = bv;
    p.emplace_back(t.name, value);
  }
  return p;
}

}  // namespace evo
