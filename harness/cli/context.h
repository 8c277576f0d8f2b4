// The loaded repository (root, gates.json, stages) lives in the run layer, which needs it;
// subcommands keep including it by this name.
#pragma once
#include "run/context.h"
