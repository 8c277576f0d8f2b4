// The exact source an elite was measured with, found by the sha256 its records keep: the file
// at the recorded path when it still has that hash, a stored source (results/sources/<sha>.cu),
// or the path's version in the repository's git history. A variant file that changed since
// would otherwise compile into another kernel than the one the records timed and gated.
#pragma once
#include <optional>
#include <string>

#include "core/variant.h"
#include "run/context.h"

namespace evo {

struct EliteSource {
  Variant variant;     // the variant as recorded: its id, stage and path, the source at the hash
  std::string origin;  // "variants/8-cluster/cluster.cu", "results/sources/<sha>.cu", "git cd81987:<path>"
};

struct EliteRef {
  std::string variant_id;   // "8-cluster/cluster"
  std::string source_path;  // as recorded, relative to the repository root
  std::string sha256;       // the recorded source_sha256
};

// nullopt with `why` naming what was searched when no source with the hash is found.
std::optional<EliteSource> find_elite_source(const Context& ctx, const EliteRef& ref, std::string* why);

}  // namespace evo
