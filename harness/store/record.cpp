#include "store/record.h"

#include <algorithm>

#include <ctime>

#include "core/outcome.h"
#include "store/typed_record.h"
#include "core/sha256.h"

namespace evo {

using nlohmann::json;

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string utc_now_compact() {
  std::string s = utc_now_iso8601();
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '-' || c == ':'; }), s.end());
  return s;
}

json candidate_json(const Candidate& c) {
  json params = json::object();
  for (const auto& [k, v] : c.params) params[k] = v;
  return {{"candidate_id", c.id()},
          {"variant", c.variant->id},
          {"stage", c.variant->stage},
          {"parent", c.variant->parent ? json(*c.variant->parent) : json(nullptr)},
          {"source_path", c.variant->path.string()},
          {"source_sha256", sha256_hex(c.variant->source)},
          {"params", params},
          {"task", c.task.name()},
          {"arch", c.arch}};
}

std::string validate_record(const json& j) { return read_record(j).error; }

}  // namespace evo
