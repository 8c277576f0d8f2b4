// An exec generator runs as a contained process tree. evo starts `evo __generator SPEC` (a
// single-threaded child of its own), which makes itself the subreaper of everything the
// generator starts (prctl PR_SET_CHILD_SUBREAPER: a double-forked or setsid() daemon is
// reparented to it, not to init), runs `/bin/sh -c COMMAND` with the request on stdin, reads
// its stdout up to a cap and keeps the end of its stderr, and once the shell ends, times out or
// writes too much, kills every process left below it. Nothing the generator writes is capped by
// a file-size limit (which would also cap the files it writes on purpose): evo reads and counts.
#pragma once
#include <chrono>
#include <filesystem>
#include <string>

#include "core/subprocess.h"

namespace evo {

struct GeneratorProcessLimits {
  std::chrono::milliseconds timeout{120000};
  size_t max_stdout_bytes = 4u << 20;
  size_t stderr_tail_bytes = 4096;
};

struct GeneratorProcess {
  ExitStatus status;         // the shell's; timed_out when the watchdog killed it
  bool overflow = false;     // it wrote more than max_stdout_bytes on stdout and was killed
  std::string out;           // stdout as bytes (at most max_stdout_bytes)
  std::string err_tail;      // the last stderr_tail_bytes of stderr, as bytes
  long stray_processes = 0;  // processes still running below it when it ended, killed
  std::string runner_error;  // set when evo's runner itself failed (then the rest is empty)
};

// Never throws for what the command does.
GeneratorProcess run_generator_process(const std::string& command, const std::string& stdin_bytes,
                                       const GeneratorProcessLimits& limits);

// Body of the hidden `evo __generator SPEC_PATH` child (see above); the exit code is 0 when it
// could run the command at all.
int generator_child_main(const std::string& spec_path);

// The end of a program's stderr as one line a user reads: its last non-empty lines (a Python
// traceback's exception, not its header), control characters as spaces, at most max_bytes
// (cut at the front), valid UTF-8.
std::string stderr_end(const std::string& bytes, size_t max_bytes = 300);

}  // namespace evo
