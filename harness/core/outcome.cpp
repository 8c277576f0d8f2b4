#include "core/outcome.h"

#include <array>
#include <utility>

namespace evo {
namespace {
constexpr std::array<std::pair<Outcome, std::string_view>, 13> kNames{{
    {Outcome::ok, "ok"},
    {Outcome::constraints, "constraints"},
    {Outcome::compile, "compile"},
    {Outcome::resources, "resources"},
    {Outcome::load, "load"},
    {Outcome::runtime, "runtime"},
    {Outcome::timeout, "timeout"},
    {Outcome::crash, "crash"},
    {Outcome::correctness, "correctness"},
    {Outcome::nondeterministic, "nondeterministic"},
    {Outcome::unsupported, "unsupported"},
    {Outcome::sanitizer, "sanitizer"},
    {Outcome::technique, "technique"},
}};
}  // namespace

std::string_view to_string(Outcome o) {
  for (const auto& [value, name] : kNames)
    if (value == o) return name;
  return "unknown";
}

std::optional<Outcome> outcome_from_string(std::string_view s) {
  for (const auto& [value, name] : kNames)
    if (name == s) return value;
  return std::nullopt;
}

}  // namespace evo
