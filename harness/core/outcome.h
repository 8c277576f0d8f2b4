// A candidate's outcome is a value with a one-line reason, never an escaping exception. One
// enum for every path: the evaluation's records, and `evo evolve`'s verdicts on proposals that
// never became a record (generator, input, duplicate).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace evo {

enum class Outcome {
  ok,
  constraints,       // a static_assert("evo:constraint ...") rejected the params
  compile,           // NVRTC failed for another reason
  resources,         // the resource gate rejected the ptxas report
  load,              // the driver could not load the cubin or find the entry point
  runtime,           // a launch error (bad configuration, too many resources)
  timeout,           // a phase ran past its limit (compile or GPU work)
  crash,             // the worker died (illegal address, trap, abort, signal)
  correctness,       // wrong, NaN/Inf, unwritten, inputs modified, out-of-bounds writes
  nondeterministic,  // two runs on the same inputs differ bitwise
  unsupported,       // the variant does not support the task or the device
  sanitizer,         // compute-sanitizer reported an error (evo run --sanitize, would-be elites)
  technique,         // the SASS lacks an instruction the stage requires (stage.json requires_sass)
  integrity,         // a timed launch did not do its work: wrong output of a timed sample, or a
                     // time below the roofline floor
  generator,         // evo evolve: the generator program failed or answered garbage
  input,             // evo evolve: a proposal evo cannot use (unknown parent, bad params or source)
  duplicate,         // evo evolve: already evaluated (same normalized source and params, or same code)
  // A new value goes here, into outcome.cpp's names, and into kOutcomeCount below.
};

// How many outcomes there are: Outcome(0) .. Outcome(kOutcomeCount - 1) are all of them.
inline constexpr std::size_t kOutcomeCount = std::size_t(Outcome::duplicate) + 1;

std::string_view to_string(Outcome o);
std::optional<Outcome> outcome_from_string(std::string_view s);

struct Verdict {
  Outcome outcome = Outcome::ok;
  std::string reason;  // one line; empty for ok
  bool ok() const { return outcome == Outcome::ok; }
};

}  // namespace evo
