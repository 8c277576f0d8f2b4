#include "run/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace evo {

Progress::Progress(size_t total)
    : total_(total), tty_(isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {}

void Progress::start_candidate(size_t index, const std::string& label) {
  index_ = index;
  label_ = label;
  phase_ = "compile";
  candidate_start_ = std::chrono::steady_clock::now();
  if (!tty_) fmt::print(stderr, "[{}/{}] {}\n", index_ + 1, total_, label_);
  draw();
}

void Progress::phase(const std::string& what) {
  phase_ = what;
  draw();
}

void Progress::draw() {
  if (!tty_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string eta = "?";
  if (index_ > 0) {
    const double left = elapsed / double(index_) * double(total_ - index_);
    eta = fmt::format("{}:{:02}", int(left) / 60, int(left) % 60);
  }
  std::string line = fmt::format("[{}/{}] {} | {} | ETA {}", index_ + 1, total_, label_, phase_, eta);
  if (line.size() > 150) line = line.substr(0, 147) + "...";
  fmt::print(stderr, "\r\033[K{}", line);
  std::fflush(stderr);
}

void Progress::done(const std::string& verdict_line) {
  if (tty_) fmt::print(stderr, "\r\033[K");
  fmt::print(stderr, "[{}/{}] {}\n", index_ + 1, total_, verdict_line);
}

void Progress::note(const std::string& line) {
  if (tty_) fmt::print(stderr, "\r\033[K");
  fmt::print(stderr, "{}\n", line);
}

}  // namespace evo
