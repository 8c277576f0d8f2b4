#include "gpu/device_check.h"

#include <algorithm>
#include <cmath>

namespace evo {

using nlohmann::json;

void add_facts(DeviceCheckFacts& total, const DeviceCheckFacts& f) {
  if (total.first_fail < 0 && f.first_fail >= 0) total.first_fail = f.first_fail;
  total.n += f.n;
  total.unwritten += f.unwritten;
  total.nonfinite += f.nonfinite;
  total.bad += f.bad;
  total.err2 += f.err2;
  total.ref2 += f.ref2;
  total.signed_err += f.signed_err;
  total.abs_ref += f.abs_ref;
  total.max_abs = std::max(total.max_abs, f.max_abs);
  total.extent = std::max(total.extent, f.extent);
  total.device_bytes = std::max(total.device_bytes, f.device_bytes);
}

json to_json(const DeviceCheckFacts& f) {
  return {{"n", f.n},
          {"unwritten", f.unwritten},
          {"nonfinite", f.nonfinite},
          {"bad", f.bad},
          {"first_fail", f.first_fail},
          {"max_abs", f.max_abs},
          {"err2", f.err2},
          {"ref2", f.ref2},
          {"signed_err", f.signed_err},
          {"abs_ref", f.abs_ref},
          {"seconds", f.seconds},
          {"reference_s", f.reference_s},
          {"device_bytes", f.device_bytes},
          {"extent", f.extent}};
}

namespace {

bool count(const json& j, const char* key, uint64_t& out, std::string& error) {
  if (!j.contains(key) || !j[key].is_number_integer() || (!j[key].is_number_unsigned() && j[key].get<int64_t>() < 0)) {
    error = std::string("device_check.") + key + " is not a count";
    return false;
  }
  out = j[key].get<uint64_t>();
  return true;
}

bool real(const json& j, const char* key, double& out, std::string& error) {
  if (!j.contains(key) || !j[key].is_number() || !std::isfinite(j[key].get<double>()) || j[key].get<double>() < 0) {
    error = std::string("device_check.") + key + " is not a finite non-negative number";
    return false;
  }
  out = j[key].get<double>();
  return true;
}

}  // namespace

std::optional<DeviceCheckFacts> device_check_from_json(const json& j, std::string& error) {
  DeviceCheckFacts f;
  if (!j.is_object()) {
    error = "device_check is not an object";
    return std::nullopt;
  }
  if (!count(j, "n", f.n, error) || !count(j, "unwritten", f.unwritten, error) ||
      !count(j, "nonfinite", f.nonfinite, error) || !count(j, "bad", f.bad, error) ||
      !count(j, "device_bytes", f.device_bytes, error) || !real(j, "max_abs", f.max_abs, error) ||
      !real(j, "err2", f.err2, error) || !real(j, "ref2", f.ref2, error) || !real(j, "seconds", f.seconds, error) ||
      !real(j, "reference_s", f.reference_s, error))
    return std::nullopt;
  if (j.contains("extent") && !count(j, "extent", f.extent, error)) return std::nullopt;    // older workers: absent
  if (j.contains("abs_ref") && !real(j, "abs_ref", f.abs_ref, error)) return std::nullopt;  // likewise
  if (j.contains("signed_err")) {  // a sum of signed terms, bounded by the absolute error's sum
    if (!j["signed_err"].is_number() || !std::isfinite(j["signed_err"].get<double>())) {
      error = "device_check.signed_err is not a finite number";
      return std::nullopt;
    }
    f.signed_err = j["signed_err"].get<double>();
  }
  const uint64_t extent = std::max(f.n, f.extent);
  if (!j.contains("first_fail") || !j["first_fail"].is_number_integer() || j["first_fail"].get<int64_t>() < -1 ||
      (j["first_fail"].get<int64_t>() >= 0 && uint64_t(j["first_fail"].get<int64_t>()) >= extent)) {
    error = "device_check.first_fail is not -1 or an element index";
    return std::nullopt;
  }
  f.first_fail = j["first_fail"].get<int64_t>();
  if (f.unwritten > f.n || f.nonfinite > f.n || f.bad > f.n || f.unwritten + f.nonfinite + f.bad > f.n ||
      ((f.unwritten + f.nonfinite + f.bad > 0) != (f.first_fail >= 0))) {
    error = "device_check counts do not add up";
    return std::nullopt;
  }
  return f;
}

}  // namespace evo
