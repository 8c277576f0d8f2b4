#include "run/context.h"

#include <cctype>

#include "core/errors.h"
#include "core/paths.h"

namespace evo {

Context Context::load() {
  Context c;
  c.root = repo_root();
  c.gates = load_gates_config(c.root / "gates" / "gates.json");
  c.stages = discover_stages(c.root);
  return c;
}

std::vector<const Stage*> Context::select_stages(const std::string& which) const {
  std::vector<const Stage*> out;
  if (which == "all") {
    for (const auto& s : stages) out.push_back(&s);
    return out;
  }
  int n = -1;
  try {
    size_t used = 0;
    n = std::stoi(which, &used);
    if (used != which.size()) n = -1;
  } catch (const std::exception&) {
  }
  if (n < 0) throw usage_error("--stage " + which + ": use a stage number (see evo list) or all");
  out.push_back(&find_stage(stages, n));
  return out;
}

std::vector<Task> Context::select_tasks(const std::vector<std::string>& names) const {
  if (names.empty()) return all_tasks();
  std::vector<Task> out;
  for (const auto& n : names) out.push_back(parse_task(n));
  return out;
}

}  // namespace evo
