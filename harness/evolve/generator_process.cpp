#include "evolve/generator_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "core/paths.h"
#include "core/utf8.h"
#include "store/atomic_file.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

volatile std::sig_atomic_t g_stop = 0;  // evo went away (PR_SET_PDEATHSIG) or asked us to stop
extern "C" void on_stop(int) { g_stop = 1; }

// /proc/<pid>/stat, or "" for a process that is gone. Plain read(2): a process exiting while
// its file is read fails the read (ESRCH), and std::ifstream turns that into an exception.
std::string proc_stat(pid_t pid) {
  const int fd = ::open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[1024];  // the fields up to the parent's pid fit well within this
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) < 0 && errno == EINTR) {
  }
  ::close(fd);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// Live processes below `root` (zombies left out), from /proc's parent links.
std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const pid_t pid = pid_t(std::atol(e->d_name));
      if (pid <= 0) continue;
      const std::string stat = proc_stat(pid);
      const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
      if (close == std::string::npos) continue;
      char state = 0;
      long ppid = 0;
      if (std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) != 2 || state == 'Z') continue;
      children.emplace(pid_t(ppid), pid);
    }
    closedir(d);
  }
  std::vector<pid_t> out, todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (auto [it, end] = children.equal_range(p); it != end; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

struct Shell {
  pid_t pid = -1;
  bool reaped = false;
  int raw = 0;
  void note(pid_t w, int status) {
    if (w == pid && !reaped) reaped = true, raw = status;
  }
};

// Kills everything below this process until nothing is left (orphans come back to us: we are
// their subreaper); the number of processes killed other than the shell.
long kill_tree(Shell& sh) {
  std::set<pid_t> killed;
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < give_up) {
    for (pid_t p : descendants(::getpid()))
      if (::kill(p, SIGKILL) == 0) killed.insert(p);
    int status = 0;
    pid_t w;
    while ((w = ::waitpid(-1, &status, WNOHANG)) > 0) sh.note(w, status);
    if (w < 0 && errno == ECHILD) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  killed.erase(sh.pid);
  return long(killed.size());
}

pid_t start_shell(const std::string& command, int in_fd, int out_fd, int err_fd) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setpgid(0, 0);
  ::dup2(in_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  for (int fd = 3; fd < 1024; ++fd) ::close(fd);
  std::signal(SIGPIPE, SIG_DFL);  // evo ignores it; the generator gets the usual default
  std::signal(SIGTERM, SIG_DFL);
  ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
  ::_exit(127);
}

struct Capture {
  int out_fd = -1, err_fd = -1;
  size_t max_out = 0, err_keep = 0;
  std::string out, err;
  bool overflow = false;
  // Reads what is there (waiting at most `wait`); false once both pipes reached end of file.
  bool pump(std::chrono::milliseconds wait) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    if (out_fd < 0 && err_fd < 0) return false;
    if (::poll(fds, 2, int(wait.count())) <= 0) return true;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? out_fd : err_fd;
      if (fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd), fd = -1;
      } else if (i == 0) {
        out.append(buf, size_t(n));
        if (out.size() > max_out) overflow = true, out.resize(max_out);
      } else {
        err.append(buf, size_t(n));
        if (err.size() > 2 * err_keep) err.erase(0, err.size() - err_keep);
      }
    }
    return out_fd >= 0 || err_fd >= 0;
  }
};

struct ChildResult {
  Shell sh;
  Capture cap;
  bool timed_out = false;
  long stray = 0;
};

// Watches the shell until it ends, times out or overflows, then kills the tree and drains the
// pipes (every writer is dead by then, so they reach end of file).
void supervise(ChildResult& r, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!g_stop && !r.cap.overflow) {
    int status = 0;
    if (::waitpid(r.sh.pid, &status, WNOHANG) == r.sh.pid) {
      r.sh.note(r.sh.pid, status);
      break;
    }
    if (Clock::now() >= deadline) {
      r.timed_out = true;
      break;
    }
    if (!r.cap.pump(std::chrono::milliseconds(50))) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool ended_by_itself = r.sh.reaped;
  const long killed = kill_tree(r.sh);
  if (ended_by_itself) r.stray = killed;
  const auto drain_until = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < drain_until && r.cap.pump(std::chrono::milliseconds(100))) {
  }
}

}  // namespace

int generator_child_main(const std::string& spec_path) {
  const json spec = json::parse(read_file(spec_path));
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::signal(SIGTERM, on_stop);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  const int in_fd = ::open(spec.at("stdin").get<std::string>().c_str(), O_RDONLY | O_CLOEXEC);
  int out_pipe[2], err_pipe[2];
  if (in_fd < 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) return 2;
  ChildResult r;
  r.sh.pid = start_shell(spec.at("command").get<std::string>(), in_fd, out_pipe[1], err_pipe[1]);
  ::close(in_fd), ::close(out_pipe[1]), ::close(err_pipe[1]);
  if (r.sh.pid < 0) return 2;
  r.cap.out_fd = out_pipe[0], r.cap.err_fd = err_pipe[0];
  r.cap.max_out = spec.at("max_stdout").get<size_t>();
  r.cap.err_keep = spec.at("stderr_tail").get<size_t>();
  supervise(r, std::chrono::milliseconds(spec.at("timeout_ms").get<long>()));
  if (r.cap.err.size() > r.cap.err_keep) r.cap.err.erase(0, r.cap.err.size() - r.cap.err_keep);
  write_file_atomic(spec.at("stdout").get<std::string>(), r.cap.out);
  write_file_atomic(spec.at("stderr").get<std::string>(), r.cap.err);
  const int raw = r.sh.raw;
  bool exited = r.sh.reaped && WIFEXITED(raw);
  int code = exited ? WEXITSTATUS(raw) : 0, sig = r.sh.reaped && WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
  if (exited && code > 128 && code <= 128 + 64)  // the shell's way of saying its command was killed
    exited = false, sig = code - 128, code = 0;
  const json status = {
      {"exited", exited},           {"code", code},     {"signal", sig},          {"timed_out", r.timed_out},
      {"overflow", r.cap.overflow}, {"stray", r.stray}, {"stopped", bool(g_stop)}};
  std::printf("%s\n", status.dump().c_str());
  return 0;
}

GeneratorProcess run_generator_process(const std::string& command, const std::string& stdin_bytes,
                                       const GeneratorProcessLimits& limits) {
  static std::atomic<long> counter{0};
  const std::string base =
      (fs::temp_directory_path() / fmt::format("evo-generator-{}-{}", ::getpid(), counter++)).string();
  const json spec = {{"command", command},
                     {"stdin", base + ".in"},
                     {"stdout", base + ".out"},
                     {"stderr", base + ".err"},
                     {"timeout_ms", long(limits.timeout.count())},
                     {"max_stdout", limits.max_stdout_bytes},
                     {"stderr_tail", limits.stderr_tail_bytes}};
  GeneratorProcess g;
  try {
    write_file_atomic(base + ".in", stdin_bytes);
    write_file_atomic(base + ".spec", spec.dump(-1, ' ', false, json::error_handler_t::replace));
    // The runner's own limit: the generator's timeout, then time to kill its tree and drain.
    const RunResult run = run_with_timeout({evo_executable().string(), "__generator", base + ".spec"},
                                           limits.timeout + std::chrono::seconds(20), {}, 1 << 20, base + ".runner");
    const json status = json::parse(run.out.substr(0, run.out.find('\n')), nullptr, false);
    if (!run.status.exited || run.status.code != 0 || !status.is_object()) {
      std::error_code no_file;
      const std::string said =
          fs::exists(base + ".runner", no_file) ? stderr_end(read_file(base + ".runner"), 300) : "";
      g.runner_error =
          fmt::format("evo's generator runner failed ({}){}", run.status.describe(), said.empty() ? "" : ": " + said);
    } else {
      g.status.exited = status.value("exited", false);
      g.status.code = status.value("code", 0);
      g.status.signal = status.value("signal", 0);
      g.status.timed_out = status.value("timed_out", false);
      g.overflow = status.value("overflow", false);
      g.stray_processes = status.value("stray", 0L);
      g.out = read_file(base + ".out");
      g.err_tail = read_file(base + ".err");
    }
  } catch (const std::exception& e) {
    g.runner_error = std::string("evo's generator runner failed: ") + e.what();
  }
  std::error_code ec;
  for (const char* ext : {".in", ".spec", ".out", ".err", ".runner"}) fs::remove(base + ext, ec);
  return g;
}

std::string stderr_end(const std::string& bytes, size_t max_bytes) {
  std::string text = valid_utf8(bytes);
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = ' ';
  std::vector<std::string> lines;
  for (size_t at = 0; at <= text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(at, nl - at);
    line.erase(0, line.find_first_not_of(' '));
    line.erase(line.find_last_not_of(' ') + 1);
    if (!line.empty()) lines.push_back(line);
    at = nl + 1;
  }
  std::string end;
  for (auto it = lines.rbegin(); it != lines.rend() && it - lines.rbegin() < 3; ++it) {
    const std::string joined = end.empty() ? *it : *it + " | " + end;
    if (joined.size() > max_bytes) {
      if (end.empty()) end = "…" + std::string(utf8_suffix(*it, max_bytes));
      break;
    }
    end = joined;
  }
  return end;
}

}  // namespace evo
