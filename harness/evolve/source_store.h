// Kernel sources from outside variants/ (evo eval, external generators): stored once under
// results/sources/<sha256>.cu so records and populations can point at them, and read back as
// a Variant of the stage they are evaluated in.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "core/candidate.h"
#include "core/variant.h"

namespace evo {

// Writes the source (if new) and returns its path relative to the repo root.
std::filesystem::path store_source(const std::filesystem::path& root, const std::filesystem::path& results_dir,
                                   const std::string& source);

// The source as a variant of `stage`: id "<stage dir>/x-<sha256 prefix>", the front matter
// parsed as for variants/ files (throws a usage error naming `origin`). `parent` (a candidate or
// variant id) overrides the front matter's when given.
Variant external_variant(const std::string& source, const Stage& stage, const std::filesystem::path& stored_path,
                         const std::string& origin, const std::optional<std::string>& parent);

// A generator's "params" over the source's front-matter defaults (each tunable it does not
// name keeps its first value). Throws a usage error naming a param that is not one of the
// source's tunables.
ParamSet answer_params(const Variant& v, const ParamSet& given);

}  // namespace evo
