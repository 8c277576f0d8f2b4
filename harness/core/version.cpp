#include "core/version.h"

#ifndef EVO_VERSION
#error "EVO_VERSION is set by harness/CMakeLists.txt from project(VERSION)"
#endif

namespace evo {

const char* evo_version() { return EVO_VERSION; }

}  // namespace evo
