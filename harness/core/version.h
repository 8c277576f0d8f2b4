#pragma once

namespace evo {

// evo's version, from project(VERSION) in the top-level CMakeLists.txt: the one place it is
// written. Records carry it (env.evo) and `evo --version` prints it.
const char* evo_version();

}  // namespace evo
