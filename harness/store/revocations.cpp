#include "store/revocations.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.h"
#include "core/param_json.h"
#include "core/paths.h"
#include "store/strict_fields.h"

namespace evo {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool hex_of_length(const std::string& s, size_t min, size_t max) {
  if (s.size() < min || s.size() > max) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// A string field that must be one non-empty line.
std::string line(StrictFields& f, const char* key) {
  std::string s = f.text(key);
  if (s.empty() || s.find('\n') != std::string::npos) f.fail(f.field(key), s, "one non-empty line");
  return s;
}

// A field this reader does not know is a typo until shown otherwise: "param" for "params" would
// otherwise withdraw every configuration of the sources.
void no_other_fields(const StrictFields& f) {
  if (!f.rest.empty())
    f.fail(f.field(f.rest.begin().key().c_str()), f.rest.begin().value(), "absent (not a known field)");
}

Revocation revocation(const json& entry, const std::string& at, const FileContext& file) {
  StrictFields f(entry, at, file);
  Revocation r;
  r.variant = line(f, "variant");
  const json* shas = f.take("source_sha256");
  if (!shas || !shas->is_array() || shas->empty())
    f.fail(f.field("source_sha256"), shas ? *shas : json(json::value_t::discarded),
           "a non-empty list of sha256 digests of the .cu files");
  for (size_t i = 0; i < shas->size(); ++i) {
    const json& s = (*shas)[i];
    if (!s.is_string() || !hex_of_length(s.get<std::string>(), 64, 64))
      f.fail(fmt::format("{}[{}]", f.field("source_sha256"), i), s, "64 lowercase hex digits (sha256 of the .cu file)");
    r.source_sha256.push_back(s.get<std::string>());
  }
  if (f.rest.contains("params")) r.params = f.params("params");
  r.reason = line(f, "reason");
  r.fixed_by = line(f, "fixed_by");
  if (!hex_of_length(r.fixed_by, 7, 40))
    f.fail(f.field("fixed_by"), r.fixed_by, "a commit (7 to 40 lowercase hex digits)");
  r.evidence = line(f, "evidence");
  if (r.evidence.front() == '/' || r.evidence.find("..") != std::string::npos)
    f.fail(f.field("evidence"), r.evidence, "a path inside the repository");
  no_other_fields(f);
  return r;
}

}  // namespace

bool Revocation::matches(const json& record) const {
  if (!record.is_object() || record.value("variant", "") != variant) return false;
  const auto sha = record.find("source_sha256");
  if (sha == record.end() || !sha->is_string()) return false;
  if (std::find(source_sha256.begin(), source_sha256.end(), sha->get<std::string>()) == source_sha256.end())
    return false;
  const auto p = record.find("params");
  for (const auto& [name, value] : params) {
    if (p == record.end() || !p->is_object()) return false;
    const auto v = p->find(name);
    if (v == p->end() || !v->is_number_integer() || v->get<long>() != value) return false;
  }
  return true;
}

std::vector<Revocation> parse_revocations(const std::string& text, const std::string& origin) {
  const FileContext file{origin, " (docs/compare-and-gate.md, \"Revoked sources\")"};
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) file.fail("not valid JSON");
  StrictFields top(j, "", file);
  const json* schema = top.take("schema");
  if (!schema || !schema->is_number_integer() || schema->get<long long>() != kRevocationSchema)
    top.fail("schema", schema ? *schema : json(json::value_t::discarded), fmt::format("{}", kRevocationSchema));
  const json* list = top.take("revoked");
  if (!list || !list->is_array()) top.fail("revoked", list ? *list : json(json::value_t::discarded), "a list");
  no_other_fields(top);
  std::vector<Revocation> out;
  for (size_t i = 0; i < list->size(); ++i) out.push_back(revocation((*list)[i], fmt::format("revoked[{}]", i), file));
  return out;
}

std::vector<Revocation> read_revocations(const fs::path& file) {
  return parse_revocations(read_file(file), file.string());
}

std::vector<Withdrawal> withdraw(const std::vector<Revocation>& revocations, std::vector<json>& records) {
  std::vector<Withdrawal> out;
  for (const Revocation& r : revocations) out.push_back({r, {}});
  if (revocations.empty()) return out;
  std::vector<json> kept;
  kept.reserve(records.size());
  for (json& record : records) {
    auto hit = std::find_if(out.begin(), out.end(), [&](const Withdrawal& w) { return w.revocation.matches(record); });
    (hit == out.end() ? kept : hit->records).push_back(std::move(record));
  }
  records = std::move(kept);
  return out;
}

}  // namespace evo
