// Error kinds that end a command, each with its documented exit code (README.md, "Exit codes").
// Candidate failures are never errors: they are Outcome values (outcome.h).
#pragma once
#include <stdexcept>
#include <string>

namespace evo {

enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 1,        // bad flag, file or field: the message names it
  kExitEnvironment = 2,  // no GPU, no driver, no NVRTC
  kExitCorrectness = 3,  // a correctness regression
  kExitPerformance = 4,  // a performance regression
  kExitInternal = 5,     // evo's own fault (a bug): the message says "internal error"; please report it
};

class EvoError : public std::runtime_error {
 public:
  EvoError(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// A command that has already said what went wrong (a gate verdict, the lines it skipped, a
// failed doctor check) ends with this: main() prints nothing more and exits with `code`. With
// EvoError it is the only way a command chooses a nonzero exit status; main() maps them once.
class CommandFailed : public EvoError {
 public:
  explicit CommandFailed(ExitCode code) : EvoError(code, "") {}
};

// Bad input: names what to fix; exit 1.
inline EvoError usage_error(const std::string& m) { return EvoError(kExitUsage, m); }
// Missing GPU, driver or toolkit piece; exit 2.
inline EvoError environment_error(const std::string& m) { return EvoError(kExitEnvironment, m); }

}  // namespace evo
