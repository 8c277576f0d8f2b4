#include "core/variant.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/errors.h"
#include "core/paths.h"

namespace evo {

using nlohmann::json;

bool Variant::supports(const Task& t) const {
  return std::find(dtypes.begin(), dtypes.end(), t.dtype_name()) != dtypes.end() &&
         std::find(head_dims.begin(), head_dims.end(), t.head_dim) != head_dims.end();
}

namespace {

// [A-Z][A-Z0-9_]*, checked by hand: std::regex recurses per character and a front matter
// with a 30 KB name would overflow the stack.
bool is_param_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || !(name[0] >= 'A' && name[0] <= 'Z')) return false;
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// Every config of the domain is compiled (and listed): a front matter asking for 1000^3 of
// them would stall every command that reads the stage.
constexpr size_t kMaxConfigs = 4096;

// A path for a message, with anything outside printable ASCII shown as '?'.
std::string sanitized_name(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';
  return s;
}

[[noreturn]] void bad(const std::string& origin, const std::string& what) {
  throw usage_error(fmt::format("{}: front matter: {}", origin, what));
}

// stage.json "requires_sass": {"UTMALDG": 1, ...}, SASS mnemonic keys to minimum counts.
std::map<std::string, long> parse_requires_sass(const json& j, const std::string& origin) {
  std::map<std::string, long> out;
  if (!j.is_object()) throw usage_error(origin + ": 'requires_sass' must be an object of instruction -> minimum count");
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number_integer() || value.get<long>() < 1)
      throw usage_error(fmt::format("{}: requires_sass.{} must be an integer >= 1", origin, key));
    out[key] = value.get<long>();
  }
  return out;
}

// The JSON between "/*evo" and "*/" at the top of the file, as an object with known fields only.
json front_matter(const std::string& source, const std::string& origin) {
  size_t start = source.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || source.compare(start, 5, "/*evo") != 0)
    bad(origin, "the file must start with a /*evo { ... } */ comment (see docs/variants.md)");
  size_t end = source.find("*/", start + 5);
  if (end == std::string::npos) bad(origin, "the /*evo comment is never closed with */");
  json j;
  try {
    j = json::parse(source.substr(start + 5, end - start - 5));
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    bad(origin, fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) bad(origin, "must be a JSON object");
  static const std::vector<std::string> known{"summary", "parent", "params", "dtypes", "head_dims", "min_sm", "notes"};
  for (auto& [key, _] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      bad(origin,
          fmt::format("unknown field '{}' (known: summary, parent, params, dtypes, head_dims, min_sm, notes)", key));
  return j;
}

// "params": NAME -> non-empty list of integers, spanning at most kMaxConfigs configurations.
std::vector<Tunable> parse_params(const json& params, const std::string& origin) {
  if (!params.is_object()) bad(origin, "field 'params' must be an object of NAME: [values]");
  std::vector<Tunable> out;
  for (auto& [name, values] : params.items()) {
    if (!is_param_name(name))
      bad(origin,
          fmt::format("param name '{}' must be UPPER_CASE letters, digits and _ (at most 64)", name.substr(0, 64)));
    if (name.rfind("EVO_", 0) == 0) bad(origin, fmt::format("param name '{}': the EVO_ prefix is reserved", name));
    if (!values.is_array() || values.empty()) bad(origin, fmt::format("param '{}' must be a non-empty list", name));
    Tunable t{name, {}};
    for (const auto& x : values) {
      if (!x.is_number_integer()) bad(origin, fmt::format("param '{}' values must be integers", name));
      t.values.push_back(x.get<long>());
    }
    out.push_back(std::move(t));
  }
  size_t configs = 1;
  for (const auto& t : out) {
    configs *= t.values.size();
    if (configs > kMaxConfigs)
      bad(origin,
          fmt::format("params span more than {} configs; split the variant or narrow the domains", kMaxConfigs));
  }
  return out;
}

// "dtypes" and "head_dims": the non-empty lists of what the variant supports.
void parse_supported(const json& j, const std::string& origin, Variant& v) {
  if (!j.contains("dtypes") || !j["dtypes"].is_array() || j["dtypes"].empty())
    bad(origin, "field 'dtypes' must be a non-empty list of \"fp16\"/\"bf16\"/\"fp8\"");
  for (const auto& d : j["dtypes"]) {
    if (!d.is_string() || (d != "fp16" && d != "bf16" && d != "fp8"))
      bad(origin, "field 'dtypes' entries must be \"fp16\", \"bf16\" or \"fp8\"");
    v.dtypes.push_back(d);
  }
  if (!j.contains("head_dims") || !j["head_dims"].is_array() || j["head_dims"].empty())
    bad(origin, "field 'head_dims' must be a non-empty list of 64/128");
  for (const auto& d : j["head_dims"]) {
    if (!d.is_number_integer() || (d != 64 && d != 128)) bad(origin, "field 'head_dims' entries must be 64 or 128");
    v.head_dims.push_back(d);
  }
}

}  // namespace

Variant parse_variant(const std::string& source, const std::string& origin) {
  const json j = front_matter(source, origin);
  Variant v;
  v.source = source;
  if (!j.contains("summary") || !j["summary"].is_string() || j["summary"].get<std::string>().empty())
    bad(origin, "field 'summary' must be a non-empty string");
  v.summary = j["summary"];
  if (j.contains("parent") && !j["parent"].is_null()) {
    if (!j["parent"].is_string()) bad(origin, "field 'parent' must be a variant id string or null");
    v.parent = j["parent"].get<std::string>();
  }
  if (j.contains("params")) v.params = parse_params(j["params"], origin);
  parse_supported(j, origin, v);
  if (j.contains("min_sm")) {
    if (!j["min_sm"].is_number_integer() || j["min_sm"] < 80 || j["min_sm"] > 120)
      bad(origin, "field 'min_sm' must be an integer like 80, 89 or 90");
    v.min_sm = j["min_sm"];
  }
  if (j.contains("notes")) {
    if (!j["notes"].is_string()) bad(origin, "field 'notes' must be a string");
    v.notes = j["notes"];
  }
  return v;
}

void join_stage(Variant& v, const Stage& s) {
  v.stage = s.number;
  v.requires_sass = s.requires_sass;
}

std::vector<Stage> discover_stages(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  static const std::regex stage_dir(R"((\d+)-([a-z0-9-]+))");
  std::vector<Stage> stages;
  const fs::path vdir = root / "variants";
  if (!fs::is_directory(vdir)) throw usage_error("no variants/ directory under " + root.string());
  for (const auto& entry : fs::directory_iterator(vdir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !std::regex_match(name, m, stage_dir)) continue;
    Stage s;
    s.number = std::stoi(m[1]);
    s.slug = m[2];
    s.dir = fs::path("variants") / name;
    s.title = s.slug;
    const fs::path sj = entry.path() / "stage.json";
    if (fs::exists(sj)) {
      try {
        json j = json::parse(read_file(sj));
        if (j.contains("title") && j["title"].is_string()) s.title = j["title"];
        if (j.contains("min_sm") && j["min_sm"].is_number_integer()) s.min_sm = j["min_sm"];
        if (j.contains("requires_sass"))
          s.requires_sass = parse_requires_sass(j["requires_sass"], (s.dir / "stage.json").string());
      } catch (const json::exception& e) {
        throw usage_error(fmt::format("{}: not valid JSON ({})", (s.dir / "stage.json").string(), e.what()));
      }
    }
    for (const auto& f : fs::directory_iterator(entry.path())) {
      if (!f.is_regular_file() || f.path().extension() != ".cu") continue;
      const fs::path rel = s.dir / f.path().filename();
      // The stem becomes the variant id in records, tables and JSON: plain names only (a byte
      // that is not UTF-8 would make every JSON writer throw).
      const std::string stem = f.path().stem().string();
      if (stem.empty() || stem.size() > 100 ||
          stem.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
              std::string::npos)
        throw usage_error(fmt::format("{}: a variant file name may use only letters, digits, '_', '-' and '.'",
                                      sanitized_name(rel.string())));
      Variant v = parse_variant(read_file(f.path()), rel.string());
      v.id = name + "/" + f.path().stem().string();
      v.path = rel;
      join_stage(v, s);
      s.variants.push_back(std::move(v));
    }
    std::sort(s.variants.begin(), s.variants.end(), [](const Variant& a, const Variant& b) { return a.id < b.id; });
    stages.push_back(std::move(s));
  }
  std::sort(stages.begin(), stages.end(), [](const Stage& a, const Stage& b) { return a.number < b.number; });
  for (size_t i = 1; i < stages.size(); ++i)
    if (stages[i].number == stages[i - 1].number)
      throw usage_error(fmt::format("two folders for stage {}: {} and {}", stages[i].number, stages[i - 1].dir.string(),
                                    stages[i].dir.string()));
  return stages;
}

const Stage& find_stage(const std::vector<Stage>& stages, int n) {
  for (const auto& s : stages)
    if (s.number == n) return s;
  std::string known;
  for (const auto& s : stages) known += (known.empty() ? "" : ", ") + std::to_string(s.number);
  throw usage_error(fmt::format("unknown stage {}: stages here are {}", n, known.empty() ? "none" : known));
}

}  // namespace evo
