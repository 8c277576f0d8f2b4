#include "evolve/source_store.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.h"
#include "core/sha256.h"
#include "store/atomic_file.h"

namespace evo {

namespace fs = std::filesystem;

fs::path store_source(const fs::path& root, const fs::path& results_dir, const std::string& source) {
  const fs::path dir = results_dir / "sources";
  fs::create_directories(dir);
  const fs::path file = dir / (sha256_hex(source) + ".cu");
  if (!fs::exists(file)) write_file_atomic(file, source);
  std::error_code ec;
  const fs::path rel = fs::relative(fs::absolute(file), fs::absolute(root), ec);
  return ec || rel.empty() || rel.native().rfind("..", 0) == 0 ? file : rel;
}

Variant external_variant(const std::string& source, const Stage& stage, const fs::path& stored_path,
                         const std::string& origin, const std::optional<std::string>& parent) {
  Variant v = parse_variant(source, origin);
  v.id = stage.dir_name() + "/x-" + sha256_hex(source).substr(0, 12);
  join_stage(v, stage);  // the stage's technique gate too
  v.path = stored_path;
  if (parent && !parent->empty()) v.parent = *parent;
  return v;
}

ParamSet answer_params(const Variant& v, const ParamSet& given) {
  ParamSet out = default_params(v);
  for (const auto& [name, value] : given) {
    auto it = std::find_if(out.begin(), out.end(), [&n = name](const auto& p) { return p.first == n; });
    if (it == out.end()) {
      std::string declared;
      for (const auto& t : v.params) declared += (declared.empty() ? "" : ", ") + t.name;
      throw usage_error(fmt::format("params.{}: not a tunable of this source (its front matter declares {})",
                                    name.substr(0, 64), declared.empty() ? "none" : declared));
    }
    it->second = value;
  }
  return out;
}

}  // namespace evo
