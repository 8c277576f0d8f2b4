// libFuzzer target: population files (store/population.h). A damaged or foreign file must be
// refused with evo's usage error naming it; an accepted one must be usable by stage_elites.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "store/population.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::string warning;
    const nlohmann::json pop = evo::parse_population(text, "populations/fuzz/fp16-d64.json", &warning);
    for (auto& [stage, _] : pop["stages"].items())
      if (stage.size() < 10 && stage.find_first_not_of("0123456789") == std::string::npos)
        (void)evo::stage_elites(pop, std::stoi(stage));
  } catch (const evo::EvoError& e) {
    if (e.code() != evo::kExitUsage) __builtin_trap();
  }
  return 0;
}
