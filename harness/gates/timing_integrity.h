// The timing integrity rules (docs/safety.md, "Timing integrity") as pure functions: what the
// timing loop reported about one benchmark shape (gpu/timing_facts.h) in, a verdict and the
// figures behind it out. run/evaluator.cpp feeds them from the worker's `timing` event;
// tests/unit/timing_integrity_test.cpp feeds them fake ones. Thresholds: gates.json "verdict"
// (repeat_*) and "roofline".
#pragma once
#include <optional>
#include <string>

#include "core/outcome.h"
#include "core/shape.h"
#include "core/stats.h"
#include "gpu/timing_facts.h"
#include "policy/config.h"

namespace evo {

// The repeat probes, summed up: launches that repeated a timed sample's inputs against those samples.
struct RepeatProbeFigures {
  int n = 0;
  double fresh_median_us = 0, repeat_median_us = 0;
  double gain_us = 0;          // the median over the pairs of (sample - its repeat)
  double limit_us = 0;         // a larger gain: the kernel skips work it has seen
  double timed_median_us = 0;  // every timed sample's (all on fresh inputs)
  // A replay is faster than its paired samples and than the timed samples as a whole: four pairs
  // alone let a slow stretch that hit the paired samples read as a replay (H200, 2026-11-30: an
  // honest split_kv's pairs at 40.0 µs against a 33.4 µs median of 401 samples, repeats 33.2).
  bool pass() const { return gain_us <= limit_us || timed_median_us - repeat_median_us <= limit_us; }
};

struct TimingEvidence {
  std::string bench;               // the benchmark id, for reasons
  Shape shape;                     // names the first failing element
  SampleStats stats;               // the timed samples
  TimingFacts facts;               // what the loop checked
  Tolerance timed_tol;             // the timed distribution's (rows, the sample at the drawn index)
  Tolerance fresh_tol;             // the post-timing distribution's (the last sample)
  std::string fresh_inputs;        // its name: a failed sample with these inputs is judged with fresh_tol
  std::optional<double> floor_us;  // the roofline floor on this GPU (none: no peaks in gates.json)
};

struct TimingJudgement {
  std::optional<Verdict> verdict;  // none: the timed samples did the work
  std::optional<RepeatProbeFigures> probes;
  std::optional<double> rows_rel_l2;  // over every row check of the shape
};

// In order: a failed sample (integrity when an isolated launch on fresh inputs is right, else
// correctness), guard bands, the row checks' relative L2 error and the drawn sample's full check
// (correctness: numerics; the last sample is the benchmark's post-timing check, judged with the
// gate cases), a sample below the roofline floor, the repeat probes (integrity).
TimingJudgement judge_timing(const TimingEvidence& e, const VerdictPolicy& policy);

// The repeat probes' figures, and whether they pass (gain <= limit). nullopt without probes.
std::optional<RepeatProbeFigures> repeat_probe_figures(const TimingFacts& f, const SampleStats& timed,
                                                       const VerdictPolicy& policy);

}  // namespace evo
