#include "cli/commands.h"

namespace evo {

// Defined in the cli layer rather than main.cpp: the tests link the layer libraries without
// main.cpp, and a subcommand's object that sets the code must still link there.
int g_exit_code = 0;

}  // namespace evo
