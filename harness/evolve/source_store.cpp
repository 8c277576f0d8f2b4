#include "evolve/source_store.h"

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
  v.stage = stage.number;
  v.path = stored_path;
  if (parent && !parent->empty()) v.parent = *parent;
  return v;
}

}  // namespace evo
