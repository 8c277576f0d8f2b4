// What a gate case's two launches may leave behind besides O's elements, checked in one place
// for the host-checked cases (gpu/worker.cpp run_gate) and the device-checked ones
// (gpu/device_check_worker.cpp) alike:
//  - O's bytes outside its elements (an offset view's lead, stride gaps, a row's slack) as the
//    case's junk left them (hacker round 4: o_zeroes_row_slack.cu wrote another tensor's memory);
//  - a split kernel's tile counters back at 0 after every launch (evo_launch.h; hacker round 7: a
//    launch count kept in a counter);
//  - the second launch runs over the split workspace the first left (its partials not refreshed:
//    Prefill::keep_partials), as a package's next call does, and must leave the whole workspace as
//    it found it: a launch on the same inputs writes the same partials, so a changed byte is state
//    kept between calls (hacker round 8: a tagged launch count in a partial slot the kernel never
//    otherwise writes restarted at every gate launch, whose partials were stale draws).
// The probes read the device (keyed hashes, stream-ordered after the launch they follow); unit
// tests give fakes.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace evo {

struct ProblemProbes {
  std::function<uint64_t()> gaps;       // O's bytes outside its elements, hashed; 0 when O has none
  std::function<bool()> split;          // whether the problem has a split workspace (its first launch allocates it)
  std::function<bool()> counters_zero;  // its tile counters all 0
  std::function<uint64_t()> workspace;  // its whole workspace, hashed
};

class GateSideEffects {
 public:
  // Hashes O's gaps: call before the first launch.
  explicit GateSideEffects(std::vector<ProblemProbes> problems);
  // After each of the two gate launches, in order: the tile counters and the workspace.
  void after_launch();
  // O's gaps against their hash before the first launch. The probe overwrites O's elements
  // (DeviceChecker::outside_elements), so call it only once the output has been read: after
  // each launch's read-back or hash, and after the device comparison.
  void check_gaps();

  bool gaps_intact() const { return gaps_intact_; }
  // Split kernels' cases only (nullopt otherwise): every launch left the tile counters at 0.
  std::optional<bool> counters_zero() const;
  // Split kernels' cases only: the repeat launch left the workspace as the first launch left it.
  std::optional<bool> workspace_repeat_same() const;

 private:
  std::vector<ProblemProbes> problems_;
  std::vector<uint64_t> gaps_, workspace_;
  int launches_ = 0;
  bool split_ = false, gaps_intact_ = true, counters_zero_ = true, workspace_same_ = true;
};

}  // namespace evo
