#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace evo {

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal " + std::to_string(sig);
  }
}

std::string ExitStatus::describe() const {
  if (timed_out) return "timed out";
  if (exited) return "exit " + std::to_string(code);
  return "killed by " + signal_name(signal);
}

namespace {

ExitStatus decode(int raw) {
  ExitStatus s;
  if (WIFEXITED(raw)) {
    s.exited = true;
    s.code = WEXITSTATUS(raw);
  } else if (WIFSIGNALED(raw)) {
    s.signal = WTERMSIG(raw);
  }
  return s;
}

// fork + exec in a new process group with limits applied in the child. Only async-signal-
// safe calls happen between fork and exec (the parent may be multi-threaded).
pid_t spawn(const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd, ResourceLimits limits) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    if (in_fd >= 0) dup2(in_fd, 0);
    if (out_fd >= 0) dup2(out_fd, 1);
    if (err_fd >= 0) dup2(err_fd, 2);
    if (limits.address_space_mb > 0) {
      rlimit r{rlim_t(limits.address_space_mb) << 20, rlim_t(limits.address_space_mb) << 20};
      setrlimit(RLIMIT_AS, &r);
    }
    if (limits.cpu_seconds > 0) {
      rlimit r{rlim_t(limits.cpu_seconds), rlim_t(limits.cpu_seconds) + 1};
      setrlimit(RLIMIT_CPU, &r);
    }
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so kill_group works even before the child ran setpgid
  return pid;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path,
                           ResourceLimits limits) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  int err_fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_ = spawn(argv, in_pipe[0], out_pipe[1], err_fd, limits);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (err_fd >= 0) close(err_fd);
  in_fd_ = in_pipe[1];
  out_fd_ = out_pipe[0];
  signal(SIGPIPE, SIG_IGN);  // a dead child must not kill the parent on write
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    kill_group();
    wait();
  }
  if (in_fd_ >= 0) close(in_fd_);
  if (out_fd_ >= 0) close(out_fd_);
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  last_timed_out_ = false;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (eof_) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      last_timed_out_ = true;
      return std::nullopt;
    }
    pollfd pfd{out_fd_, POLLIN, 0};
    int r = poll(&pfd, 1, int(std::min<long>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[65536];
    ssize_t n = read(out_fd_, buf, sizeof(buf));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      eof_ = true;
    } else {
      buffer_.append(buf, size_t(n));
    }
  }
}

bool ChildProcess::write_line(const std::string& line) {
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(in_fd_, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += size_t(n);
  }
  return true;
}

void ChildProcess::kill_group() {
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
}

ExitStatus ChildProcess::wait() {
  if (reaped_) return status_;
  int raw = 0;
  while (waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  status_ = decode(raw);
  status_.timed_out = timed_out_;
  ::kill(-pid_, SIGKILL);  // anything the child left behind in its group
  return status_;
}

RunResult run_with_timeout(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                           ResourceLimits limits, size_t max_output, const std::string& stderr_path) {
  ChildProcess child(argv, stderr_path, limits);
  RunResult r;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto line = child.read_line(std::max(left, std::chrono::milliseconds(1)));
    if (line) {
      if (r.out.size() < max_output) r.out += *line + "\n";
      continue;
    }
    if (child.last_read_timed_out()) {
      child.mark_timed_out();
      child.kill_group();
    }
    break;
  }
  r.status = child.wait();
  return r;
}

}  // namespace evo
