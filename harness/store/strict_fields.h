// Reading one object of a file evo derives (a population, its elites, its regime table) strictly:
// a value no evo writes (a negative time, an unknown regime name, a params value that is not an
// integer) refuses the whole file, naming the file and the field as the record reader names a
// line (store/record_values.h): "populations/g/t.json: field 'stages.3[0].fitness.geomean_median_us'
// is -5: it must be a finite number > 0 (restore it ...)". Fields it is not asked for stay in
// `rest`, the object's `extra`, and are written back as they came (a newer minor's fields).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/candidate.h"

namespace evo {

// The file being read: its name for messages and how to restore it.
struct FileContext {
  std::string origin;                                     // "populations/nvidia-h200/fp16-d64.json"
  std::string fix;                                        // " (restore it from the logs with `evo population rebuild`)"
  [[noreturn]] void fail(const std::string& what) const;  // usage error: "<origin>: <what><fix>"
};

class StrictFields {
 public:
  // `at`: the object's path in the file ("stages.3[0]", "regimes.table[1]"); "" for the top.
  StrictFields(const nlohmann::json& object, std::string at, const FileContext& file);

  std::string field(const char* key) const;  // "stages.3[0].variant"
  [[noreturn]] void fail(const std::string& field, const nlohmann::json& value, const std::string& need) const;

  std::string text(const char* key);                         // a string, required
  std::optional<std::string> text_or_null(const char* key);  // a string, null or absent
  long long count(const char* key);                          // an integer >= 0, required
  std::optional<long long> count_or_absent(const char* key);
  double time(const char* key);  // a finite number >= 0, required
  // A finite number, > 0 (`positive`) or >= 0; null or absent: nullopt.
  std::optional<double> time_or_null(const char* key, bool positive);
  ParamSet params(const char* key);                // {"NAME": integer}, required
  nlohmann::json object_or_null(const char* key);  // an object kept as it is, or null (absent: null)
  const nlohmann::json* take(const char* key);     // the raw value, moved out of `rest` (nullptr: absent)

  const std::string& at() const { return at_; }
  const FileContext& file() const { return file_; }
  nlohmann::json rest;  // the fields not taken yet

 private:
  nlohmann::json taken_;  // values handed out by take(), kept alive for the caller
  std::string at_;
  const FileContext& file_;
};

}  // namespace evo
