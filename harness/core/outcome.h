// A candidate's outcome is a value with a one-line reason, never an escaping exception.
#pragma once
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
};

std::string_view to_string(Outcome o);
std::optional<Outcome> outcome_from_string(std::string_view s);

struct Verdict {
  Outcome outcome = Outcome::ok;
  std::string reason;  // one line; empty for ok
  bool ok() const { return outcome == Outcome::ok; }
};

}  // namespace evo
