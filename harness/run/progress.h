// Live progress: one rewritten line on a terminal, plain log lines otherwise.
#pragma once
#include <chrono>
#include <string>

namespace evo {

class Progress {
 public:
  explicit Progress(size_t total);
  void start_candidate(size_t index, const std::string& label);
  void phase(const std::string& what);
  void done(const std::string& verdict_line);  // ends the candidate with a permanent line
  void note(const std::string& line);          // a permanent line between candidates

 private:
  void draw();
  size_t total_, index_ = 0;
  bool tty_;
  std::string label_, phase_;
  std::chrono::steady_clock::time_point start_, candidate_start_;
};

}  // namespace evo
