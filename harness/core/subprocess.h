// Child processes with a watchdog: each child leads its own process group so a hung or
// crashed candidate is killed with everything it started, and only that child dies.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace evo {

struct ResourceLimits {
  long address_space_mb = 0;  // RLIMIT_AS; 0 = unlimited
  long cpu_seconds = 0;       // RLIMIT_CPU; 0 = unlimited
};

// How a child ended.
struct ExitStatus {
  bool exited = false;  // normal exit with `code`
  int code = 0;
  int signal = 0;                // killed by this signal (0 if exited)
  bool timed_out = false;        // the watchdog killed it
  std::string describe() const;  // "exit 3", "signal SIGSEGV", "timed out"
};

// A child with a pipe to its stdin and one from its stdout (line protocol); its stderr
// goes to a file so a crash leaves its last words behind.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path, ResourceLimits limits = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Next line from stdout, or nullopt on EOF or when `timeout` passes first (timed_out() tells).
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  bool write_line(const std::string& line);  // false if the child is gone
  bool last_read_timed_out() const { return last_timed_out_; }
  void kill_group();  // SIGKILL to the whole process group
  ExitStatus wait();  // reaps; after kill_group, reports timed_out if it was a timeout kill
  void mark_timed_out() { timed_out_ = true; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1;
  std::string buffer_;
  bool eof_ = false, last_timed_out_ = false, timed_out_ = false, reaped_ = false;
  ExitStatus status_;
};

// Runs a child to completion with a wall-clock limit; collects stdout (capped) and status. Its
// stderr goes to `stderr_path` (dropped by default).
struct RunResult {
  ExitStatus status;
  std::string out;
};
RunResult run_with_timeout(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                           ResourceLimits limits = {}, size_t max_output = 1 << 20,
                           const std::string& stderr_path = "/dev/null");

std::string signal_name(int sig);

}  // namespace evo
