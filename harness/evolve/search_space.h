// The domain `evo evolve` searches: each variant's front-matter tunables, widened by the
// optional "search" entry of the stage's stage.json ({"<variant stem>": {"PARAM": [values]}}).
// The extra values live outside the variant file on purpose: a candidate id hashes the file,
// so widening the search there would rename every configuration already measured.
#pragma once
#include <filesystem>
#include <vector>

#include "core/candidate.h"

namespace evo {

struct SearchVariant {
  const Variant* variant = nullptr;
  std::vector<Tunable> tunables;  // front matter values first, then the stage.json extras
  size_t configs() const;
};

// Throws a usage error naming stage.json when its "search" entry is malformed.
std::vector<SearchVariant> search_space(const std::filesystem::path& root, const Stage& stage, const Task& task);

}  // namespace evo
