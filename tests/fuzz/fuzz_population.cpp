// libFuzzer target: population files (store/population.h). A damaged or foreign file must be
// refused with evo's usage error naming it; an accepted one must write back to what it read.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "store/population.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::string warning;
    const evo::Population pop = evo::parse_population(text, "populations/fuzz/fp16-d64.json", &warning);
    const std::string again = evo::population_json(pop).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    const evo::Population back = evo::parse_population(again, "populations/fuzz/fp16-d64.json", &warning);
    if (evo::population_json(back) != evo::population_json(pop)) __builtin_trap();
  } catch (const evo::EvoError& e) {
    if (e.code() != evo::kExitUsage) __builtin_trap();
  }
  return 0;
}
