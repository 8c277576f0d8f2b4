#include "core/outcome.h"

#include <array>
#include <utility>

namespace evo {
namespace {
constexpr std::array<std::pair<Outcome, std::string_view>, kOutcomeCount> kNames{{
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
    {Outcome::integrity, "integrity"},
    {Outcome::generator, "generator"},
    {Outcome::input, "input"},
    {Outcome::duplicate, "duplicate"},
}};
// Every value in enum order, so Outcome(i) has kNames[i]: a value added to the enum without a
// name here fails the build.
constexpr bool names_in_enum_order() {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i].first != Outcome(i) || kNames[i].second.empty()) return false;
  return true;
}
static_assert(names_in_enum_order(), "kNames must name every Outcome, in enum order");
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
