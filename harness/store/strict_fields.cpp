#include "store/strict_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "core/errors.h"
#include "core/param_json.h"

namespace evo {

using nlohmann::json;

namespace {
// A value as a message shows it: short, and never invalid UTF-8 from a damaged file.
std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}
}  // namespace

void FileContext::fail(const std::string& what) const { throw usage_error(origin + ": " + what + fix); }

StrictFields::StrictFields(const json& object, std::string at, const FileContext& file)
    : rest(object), taken_(json::object()), at_(std::move(at)), file_(file) {
  if (!rest.is_object()) file_.fail(fmt::format("field '{}' is {}: it must be an object", at_, shown(object)));
}

std::string StrictFields::field(const char* key) const { return at_.empty() ? key : at_ + "." + key; }

void StrictFields::fail(const std::string& field, const json& value, const std::string& need) const {
  file_.fail(value.is_discarded() ? fmt::format("field '{}' missing: it must be {}", field, need)
                                  : fmt::format("field '{}' is {}: it must be {}", field, shown(value), need));
}

const json* StrictFields::take(const char* key) {
  auto it = rest.find(key);
  if (it == rest.end()) return nullptr;
  json& kept = taken_[key] = std::move(*it);
  rest.erase(it);
  return &kept;
}

std::string StrictFields::text(const char* key) {
  const json* v = take(key);
  if (!v || !v->is_string()) fail(field(key), v ? *v : json(json::value_t::discarded), "a string");
  return v->get<std::string>();
}

std::optional<std::string> StrictFields::text_or_null(const char* key) {
  const json* v = take(key);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_string()) fail(field(key), *v, "a string or null");
  return v->get<std::string>();
}

std::optional<long long> StrictFields::count_or_absent(const char* key) {
  const json* v = take(key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<long long>() < 0))
    fail(field(key), *v, "an integer >= 0");
  return v->get<long long>();
}

long long StrictFields::count(const char* key) {
  if (!rest.contains(key)) fail(field(key), json(json::value_t::discarded), "an integer >= 0");
  return *count_or_absent(key);
}

std::optional<double> StrictFields::time_or_null(const char* key, bool positive) {
  const json* v = take(key);
  if (!v || v->is_null()) return std::nullopt;
  const char* need = positive ? "a finite number > 0" : "a finite number >= 0";
  if (!v->is_number()) fail(field(key), *v, need);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < 0 || (positive && x == 0)) fail(field(key), *v, need);
  return x;
}

double StrictFields::time(const char* key) {
  if (!rest.contains(key) || rest[key].is_null())
    fail(field(key), rest.contains(key) ? rest[key] : json(json::value_t::discarded), "a finite number >= 0");
  return *time_or_null(key, false);
}

ParamSet StrictFields::params(const char* key) {
  const json* v = take(key);
  const char* need = "an object of integer tunables {\"NAME\": integer}";
  if (!v) fail(field(key), json(json::value_t::discarded), need);
  auto p = params_from_json(*v);
  if (!p) fail(field(key), *v, need);
  return *p;
}

json StrictFields::object_or_null(const char* key) {
  const json* v = take(key);
  if (!v || v->is_null()) return nullptr;
  if (!v->is_object()) fail(field(key), *v, "an object or null");
  return *v;
}

}  // namespace evo
