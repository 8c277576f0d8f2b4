// What every subcommand needs: the repo root, gates.json and the stages on disk, loaded once.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/variant.h"
#include "policy/config.h"

namespace evo {

struct Context {
  std::filesystem::path root;
  GatesConfig gates;
  std::vector<Stage> stages;

  static Context load();  // throws usage errors naming the bad file
  // Stage numbers from "N" or "all".
  std::vector<const Stage*> select_stages(const std::string& which) const;
  std::vector<Task> select_tasks(const std::vector<std::string>& names) const;  // empty = all
};

}  // namespace evo
