// Checks on the raw command line that no single option can make: every argument must be UTF-8,
// because names, paths and values end up in records, reports and messages written as JSON,
// whose writer throws on an invalid byte (which used to surface as "internal error", exit 5).
#pragma once
#include <string>
#include <vector>

namespace evo {

// Throws a usage error (exit 1) naming the first argument that is not valid UTF-8: the option
// it belongs to ("--gpu", "--out=...") or its position, shown with U+FFFD for the bad bytes.
void check_arguments_utf8(const std::vector<std::string>& args);

}  // namespace evo
