// libFuzzer target: variant front matter (core/variant.h). Candidates are untrusted files; the
// parser's only way to say no is evo's usage error (exit 1 with a message naming the file).
// Any other exception, a crash or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/candidate.h"
#include "core/errors.h"
#include "core/variant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const evo::Variant v = evo::parse_variant(source, "variants/0-fuzz/fuzz.cu");
    // What every command does next with an accepted variant: enumerate its configs.
    (void)evo::expand_params(v).size();
  } catch (const evo::EvoError& e) {
    if (e.code() != evo::kExitUsage) __builtin_trap();
  }
  return 0;
}
