// Variants and stages as found on disk: variants/<N>-<slug>/stage.json and *.cu files with
// JSON front matter (docs/variants.md). Nothing is registered anywhere else.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/task.h"

namespace evo {

struct Tunable {
  std::string name;
  std::vector<long> values;  // first = default
};

struct Variant {
  std::string id;  // "<N>-<slug>/<stem>"
  int stage = 0;
  std::filesystem::path path;  // relative to the repo root
  std::string source;
  std::string summary;
  std::optional<std::string> parent;
  std::vector<Tunable> params;
  std::vector<std::string> dtypes;
  std::vector<int> head_dims;
  int min_sm = 80;
  std::string notes;
  // SASS instruction counts the stage requires (stage.json "requires_sass"), e.g. UTMALDG >= 1.
  std::map<std::string, long> requires_sass;

  bool supports(const Task& t) const;
};

struct Stage {
  int number = 0;
  std::string slug;
  std::string title;
  std::filesystem::path dir;  // relative to the repo root
  int min_sm = 80;
  std::map<std::string, long> requires_sass;
  std::vector<Variant> variants;
  std::string dir_name() const { return std::to_string(number) + "-" + slug; }
};

// Parses the leading /*evo {json} */ comment. `origin` names the file in messages.
// Throws a usage error that names the file and the bad field.
Variant parse_variant(const std::string& source, const std::string& origin);

// Makes v a candidate source of stage s, wherever it came from (variants/, evo eval, a
// generator): the stage's number and its technique requirements (requires_sass), so every
// source of a stage meets the same gate.
void join_stage(Variant& v, const Stage& s);

// Every stage under <root>/variants, sorted by number, each with its variants sorted by id.
std::vector<Stage> discover_stages(const std::filesystem::path& root);
// The stage numbered n; throws a usage error listing the stages that exist.
const Stage& find_stage(const std::vector<Stage>& stages, int n);

}  // namespace evo
