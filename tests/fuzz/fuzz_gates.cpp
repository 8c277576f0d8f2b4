// libFuzzer target: gates/gates.json (gates/config.h). Refusal is evo's usage error naming the
// field; an accepted config must answer the questions every run asks of it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "core/task.h"
#include "policy/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const evo::GatesConfig g = evo::parse_gates_config(text, "gates/gates.json");
    for (const auto& t : evo::all_tasks()) (void)g.tolerance(t);
    for (const auto& [arch, _] : g.resources) (void)g.caps(arch);
  } catch (const evo::EvoError& e) {
    if (e.code() != evo::kExitUsage) __builtin_trap();
  }
  return 0;
}
