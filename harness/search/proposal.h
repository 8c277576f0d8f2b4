// A proposal: what a generator answers for `evo evolve` to evaluate. Tunable strategies
// (search/strategy.h) set a variant and its params with a fidelity; external programs
// (evolve/generator.h) give a whole source.
#pragma once
#include <string>

#include "core/candidate.h"
#include "search/fidelity.h"

namespace evo {

struct Proposal {
  const Variant* variant = nullptr;  // builtin: the variant file whose tunables it sets
  ParamSet params;                   // the tunables (external: those the answer set, by name)
  std::string source;                // external: the whole kernel, front matter first
  std::string parent;                // candidate id(s) it came from ("a+b" for a crossover)
  std::string rationale;
  Fidelity fidelity = Fidelity::unset;  // tunable strategies: how to evaluate it (fidelity.h)
  bool params_given = false;            // external: the answer had "params" (else the front matter's first values)
};

}  // namespace evo
