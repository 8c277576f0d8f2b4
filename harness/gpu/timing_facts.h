// What the timing loop (gpu/timing_loop.h) reports about one benchmark shape beside its
// statistics: that every timed sample ran on inputs no launch had seen, what was checked of the
// timed outputs and how, the repeat probes' times, and the first failure. Facts only; the parent
// decides (gates/timing_integrity.h). It decodes them from an untrusted line, so
// timing_facts_from_json checks every field.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device_check.h"

namespace evo {

// One launch whose every output element was compared with evo's reference on the GPU.
struct FullCheck {
  int sample = -1;            // index among the timed samples (-1: not one of them)
  std::string why;            // "last", "drawn" (an index drawn at run time), "isolated", "shape"
  std::string inputs;         // the input distribution of its fresh inputs
  double us = 0;              // the launch's time (L2 flushed, events around the launch)
  bool inputs_intact = true;  // the inputs' keyed hash after the launch equals the one before
  DeviceCheckFacts facts;
};

// The first timed sample whose check failed; the loop stopped there.
struct SampleFailure {
  int sample = 0;
  // "rows", "full", "inputs" (the kernel changed them), "probe" (the repeat's rows), "warm_up"
  // (a warm-up launch drawn to be verified: its rows; `sample` is its index among the warm-ups)
  std::string what;
  std::string inputs;  // the distribution of its inputs (the tolerance its counts are judged with)
  DeviceCheckFacts facts;
};

struct TimingFacts {
  int samples = 0;              // timed samples, each on fresh inputs
  int rows_per_sample = 0;      // query rows drawn at run time and checked after each
  uint64_t rows_checked = 0;    // over samples and probes
  int warm_up_verified = 0;     // warm-up launches drawn at run time and verified (their rows)
  DeviceCheckFacts rows;        // their comparison, summed (first_fail: of the first failing sample)
  std::vector<FullCheck> full;  // "drawn", "last"
  // Repeat probes: the time of a timed sample, and of the launch right after it on the same inputs.
  std::vector<double> probe_fresh_us, probe_repeat_us;
  bool inputs_intact = true, guards_intact = true;
  std::optional<SampleFailure> failure;
  std::optional<FullCheck> isolated;  // after a failure: one launch after a pause, fresh inputs
};

nlohmann::json to_json(const FullCheck& c);
nlohmann::json to_json(const TimingFacts& f);
// nullopt and `error` set (one line, naming the field) when anything is missing or malformed.
std::optional<FullCheck> full_check_from_json(const nlohmann::json& j, std::string& error);
std::optional<TimingFacts> timing_facts_from_json(const nlohmann::json& j, std::string& error);

}  // namespace evo
