// Compiles many candidates on a thread pool (each compile in its own child process).
#pragma once
#include <vector>

#include "compile/compiler.h"

namespace evo {

std::vector<CompileResult> compile_all(const Compiler& compiler, const std::vector<Candidate>& candidates,
                                       unsigned jobs);

}  // namespace evo
