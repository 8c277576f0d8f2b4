// What GPU time buys in `evo evolve` (docs/evolve.md, "Fidelity"): a strategy asks for each
// proposal's evaluation at one of two fidelities, as successive halving does with its rungs.
//   screen: the `small` gate set with the first seed (no sampled cases), then every benchmark
//           shape timed with fewer samples (at least 5 after 10 ms of warm-up, the relative
//           standard error target relaxed to 1 %, at most 300 ms a shape), with the timing
//           loop's integrity checks as always; the watchdog kills a hang after 2 s of a gate case
//           (10 s of a timed shape). Its fitness is ranked only against other screens
//           (benchmark "screen-<hash>"), never with fitness that passed the full gate.
//   full:   the whole gate (every set, seed and sampled case) and gates.json's timing: the only
//           fitness that enters a population.
// The screen's plan is the loop's (evolve/screen_plan.h); a strategy only names the fidelity.
#pragma once

namespace evo {

enum class Fidelity {
  unset,    // the loop's rule: full, or with --quick the screen and then full when within --promote
  screen,   // the screen only
  full,     // the full evaluation only
  promote,  // the full evaluation of a configuration this run screened (not a duplicate)
};

const char* to_string(Fidelity f);

}  // namespace evo
