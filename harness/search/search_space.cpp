#include "search/search_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/paths.h"

namespace evo {

using nlohmann::json;

size_t SearchVariant::configs() const {
  size_t n = 1;
  for (const auto& t : tunables) n *= t.values.size();
  return n;
}

std::vector<ParamSet> SearchVariant::all() const {
  std::vector<ParamSet> out;
  const size_t n = configs();
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    ParamSet p(tunables.size());
    size_t rest = i;
    for (size_t k = tunables.size(); k-- > 0;) {
      p[k] = {tunables[k].name, tunables[k].values[rest % tunables[k].values.size()]};
      rest /= tunables[k].values.size();
    }
    out.push_back(std::move(p));
  }
  return out;
}

ConstraintCheck SearchVariant::check(const ParamSet& params) const {
  if (!rules) return {};
  // The compiler's prelude (compile/compiler.cpp final_source): the task, then the params.
  std::map<std::string, long long> defined{
      {"EVO_DTYPE", task.dtype_code()}, {"EVO_HEAD_DIM", task.head_dim}, {"EVO_CAUSAL", task.causal ? 1 : 0}};
  for (const auto& [name, value] : params) defined[name] = value;
  return rules->check(defined);
}

std::vector<Config> feasible_configs(const std::vector<SearchVariant>& space) {
  std::vector<Config> out;
  for (const auto& sv : space)
    for (auto& p : sv.all())
      if (sv.feasible(p)) out.push_back({&sv, std::move(p)});
  return out;
}

size_t SearchVariant::feasible_configs() const {
  size_t n = 0;
  for (const auto& p : all()) n += feasible(p);
  return n;
}

SearchVariant make_search_variant(const Variant& v, std::vector<Tunable> tunables, const Task& task,
                                  const std::filesystem::path& common_dir) {
  return make_search_variant(v, std::move(tunables), task, [&](const std::string& name) -> std::optional<std::string> {
    const auto file = common_dir / name;
    if (name.find("..") != std::string::npos || !std::filesystem::is_regular_file(file)) return std::nullopt;
    return read_file(file);
  });
}

SearchVariant make_search_variant(const Variant& v, std::vector<Tunable> tunables, const Task& task,
                                  const std::function<std::optional<std::string>(const std::string&)>& include) {
  return {&v, std::move(tunables), std::make_shared<const ConstraintRules>(ConstraintRules::parse(v.source, include)),
          task};
}

namespace {

// The macros the rules use, directly or through other macros.
json used_macros(const ConstraintRules& rules) {
  std::vector<std::string> todo;
  auto names = [&](const std::string& text) {
    for (size_t i = 0; i < text.size();) {
      if (!(std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      todo.push_back(text.substr(i, j - i));
      i = j;
    }
  };
  for (const auto& r : rules.rules()) names(r.condition);
  json out = json::object();
  while (!todo.empty()) {
    const std::string n = todo.back();
    todo.pop_back();
    auto it = rules.macros().find(n);
    if (it == rules.macros().end() || out.contains(n)) continue;
    out[n] = it->second;
    names(it->second);
  }
  return out;
}

}  // namespace

json search_space_json(const SearchVariant& sv) {
  json t = json::object(), rules = json::array(), macros = json::object();
  for (const auto& tn : sv.tunables) t[tn.name] = tn.values;
  if (sv.rules) {
    for (const auto& r : sv.rules->rules())
      rules.push_back({{"rule", r.condition}, {"message", r.message}, {"line", r.line}});
    macros = used_macros(*sv.rules);
    for (const auto& tn : sv.tunables) macros.erase(tn.name);  // set by the params
  }
  return {{"variant", sv.variant->id}, {"tunables", t},
          {"configs", sv.configs()},   {"feasible_configs", sv.feasible_configs()},
          {"constraints", rules},      {"macros", macros}};
}

std::vector<SearchVariant> search_space(const std::filesystem::path& root, const Stage& stage, const Task& task) {
  json extra = json::object();
  const auto file = root / stage.dir / "stage.json";
  if (std::filesystem::exists(file)) {
    try {
      json j = json::parse(read_file(file));
      if (j.contains("search")) extra = j["search"];
    } catch (const json::exception& e) {
      throw usage_error(fmt::format("{}: not valid JSON ({})", file.string(), e.what()));
    }
  }
  if (!extra.is_object())
    throw usage_error(file.string() + ": \"search\" must be an object {\"<variant>\": {\"PARAM\": [values]}}");
  std::vector<SearchVariant> out;
  for (const auto& v : stage.variants) {
    if (!v.supports(task)) continue;
    SearchVariant sv = make_search_variant(v, v.params, task, root / "variants" / "common");
    const std::string stem = v.path.stem().string();
    if (extra.contains(stem)) {
      for (auto& [name, values] : extra[stem].items()) {
        // clang 14 (the fuzz build) cannot capture a structured binding: capture a copy by name.
        auto it = std::find_if(sv.tunables.begin(), sv.tunables.end(),
                               [key = std::string(name)](const Tunable& t) { return t.name == key; });
        if (it == sv.tunables.end() || !values.is_array())
          throw usage_error(fmt::format("{}: search.{}.{}: not a tunable of {} or not a list of integers",
                                        file.string(), stem, name, v.id));
        for (const auto& x : values) {
          if (!x.is_number_integer())
            throw usage_error(fmt::format("{}: search.{}.{}: values must be integers", file.string(), stem, name));
          if (std::find(it->values.begin(), it->values.end(), x.get<long>()) == it->values.end())
            it->values.push_back(x.get<long>());
        }
      }
    }
    out.push_back(std::move(sv));
  }
  return out;
}

}  // namespace evo
