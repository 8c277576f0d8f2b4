// The ranges of gates.json's numbers, checked once at load: a negative tolerance, a zero budget
// or limit, or a confidence outside (0, 1) would silently loosen a gate or stop nothing, so it is
// a usage error (exit 1) naming the key (policy/config.h reads the types; this, the values).
#pragma once
#include <string>

#include "policy/config.h"

namespace evo {

// Throws a usage error "<origin> <key> is <value>: it must be <range>" for the first value out of
// range.
void check_config_ranges(const GatesConfig& c, const std::string& origin);

}  // namespace evo
