#include "evolve/search_space.h"

#include <fmt/format.h>

#include <algorithm>
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
    SearchVariant sv{&v, v.params};
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
