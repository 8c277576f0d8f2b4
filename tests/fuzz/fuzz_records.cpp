// libFuzzer target: results logs (store/records.h), then what `evo merge` and `evo population
// rebuild` do with the records that pass: derive the populations and read each one back.
// parse_records_text never throws; derive_populations must not throw on records it accepted;
// every population it derives must pass parse_population.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "store/population.h"
#include "store/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  evo::RecordSet rs;
  evo::parse_records_text(text, "results/fuzz.jsonl", rs);
  for (const auto& [key, population] : evo::derive_populations(rs.records))
    (void)evo::parse_population(
        evo::population_json(population).dump(2, ' ', false, nlohmann::json::error_handler_t::replace), key);
  return 0;
}
