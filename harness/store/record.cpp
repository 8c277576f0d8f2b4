#include "store/record.h"

#include <algorithm>
#include <ctime>

#include "core/outcome.h"
#include "core/sha256.h"
#include "store/typed_record.h"

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

Record candidate_record(const Candidate& c) {
  Record r;
  r.schema = *SchemaVersion::parse(kRecordSchemaVersion);
  r.candidate_id = c.id();
  r.variant = c.variant->id;
  r.stage = c.variant->stage;
  if (c.variant->parent)
    r.parent = *c.variant->parent;
  else
    r.extra["parent"] = nullptr;
  r.source_path = c.variant->path.string();
  r.source_sha256 = sha256_hex(c.variant->source);
  r.params = c.params;
  std::sort(r.params.begin(), r.params.end());  // key order, as a record read back has them
  r.task = c.task.name();
  r.arch = c.arch;
  return r;
}

std::string validate_record(const json& j) { return read_record(j).error; }

}  // namespace evo
