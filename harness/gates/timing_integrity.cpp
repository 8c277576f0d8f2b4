#include "gates/timing_integrity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gates/correctness.h"

namespace evo {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}

std::string what_failed(const SampleFailure& f, int rows) {
  if (f.what == "rows") return fmt::format("{} query rows drawn at run time", rows);
  if (f.what == "probe") return fmt::format("the launch that repeated its inputs, {} query rows", rows);
  if (f.what == "inputs") return "its inputs";
  return "every output element";
}

// A sample's check failed and the loop stopped there. Right after a pause on fresh inputs means
// the kernel does the work only when it is not timed.
Verdict failed_sample(const TimingEvidence& e) {
  const SampleFailure& f = *e.facts.failure;
  const Tolerance& tol = f.inputs == e.fresh_inputs ? e.fresh_tol : e.timed_tol;
  const std::string where =
      f.what == "warm_up"
          ? fmt::format("timing {}: warm-up launch {} (a sample of the warm-up drawn at run time, {} query rows)",
                        e.bench, f.sample + 1, e.facts.rows_per_sample)
          : fmt::format("timing {}: timed sample {} of {} ({})", e.bench, f.sample + 1, e.facts.samples,
                        what_failed(f, e.facts.rows_per_sample));
  const std::string why = f.what == "inputs" ? "modified its inputs" : check_counts(f.facts, tol, e.shape).reason;
  if (!e.facts.isolated) return {Outcome::correctness, fmt::format("{}: {}; no isolated launch ran", where, why)};
  const FullCheck& iso = *e.facts.isolated;
  const std::string iso_fails =
      iso.inputs_intact ? check_counts(iso.facts, tol, e.shape).reason : std::string("modified its inputs");
  if (!iso_fails.empty())
    return {Outcome::correctness,
            fmt::format("{}: {}; an isolated launch on fresh {} inputs: {}", where, why, iso.inputs, iso_fails)};
  return {Outcome::integrity,
          fmt::format("{}: {}; an isolated launch on fresh inputs is right: the timed launches did not do the work",
                      where, why)};
}

}  // namespace

std::optional<RepeatProbeFigures> repeat_probe_figures(const TimingFacts& f, const SampleStats& timed,
                                                       const VerdictPolicy& policy) {
  const size_t n = std::min(f.probe_fresh_us.size(), f.probe_repeat_us.size());
  if (n == 0) return std::nullopt;
  RepeatProbeFigures p;
  p.n = int(n);
  std::vector<double> gains;
  for (size_t i = 0; i < n; ++i) gains.push_back(f.probe_fresh_us[i] - f.probe_repeat_us[i]);
  p.gain_us = median(gains);
  p.fresh_median_us = median(f.probe_fresh_us);
  p.repeat_median_us = median(f.probe_repeat_us);
  p.timed_median_us = timed.median;
  // The timed samples' spread as a normal sigma (p10 to p90 is 2.563 sigma); a pair's difference
  // has sqrt(2) of it, and the median of n of them about 1.2533 / sqrt(n) of that.
  const double sigma = std::max(0.0, timed.p90 - timed.p10) / 2.5631;
  const double se = 1.2533 * std::sqrt(2.0) * sigma / std::sqrt(double(n));
  p.limit_us = std::max(policy.repeat_z * se, policy.repeat_min_fraction * timed.median) + policy.repeat_slack_us;
  return p;
}

TimingJudgement judge_timing(const TimingEvidence& e, const VerdictPolicy& policy) {
  TimingJudgement j;
  const TimingFacts& f = e.facts;
  if (f.rows.ref2 > 0) j.rows_rel_l2 = std::sqrt(f.rows.err2 / f.rows.ref2);
  j.probes = repeat_probe_figures(f, e.stats, policy);
  if (f.failure) {
    j.verdict = failed_sample(e);
    return j;
  }
  if (!f.guards_intact) {
    j.verdict = Verdict{Outcome::correctness,
                        fmt::format("timing {}: wrote outside its buffers (guard bytes changed)", e.bench)};
    return j;
  }
  if (f.rows.n > 0) {
    const OutputCheck rows = check_counts(f.rows, e.timed_tol, e.shape);
    if (!rows.pass) {
      j.verdict = Verdict{
          Outcome::correctness,
          fmt::format("timing {}: the query rows checked after {} timed samples: {}", e.bench, f.samples, rows.reason)};
      return j;
    }
  }
  for (const FullCheck& c : f.full) {
    if (c.why != "drawn") continue;  // the last sample is the benchmark's post-timing check
    const OutputCheck oc = check_counts(c.facts, e.timed_tol, e.shape);
    if (!oc.pass) {
      j.verdict = Verdict{Outcome::correctness, fmt::format("timing {}: timed sample {} of {} (every element): {}",
                                                            e.bench, c.sample + 1, f.samples, oc.reason)};
      return j;
    }
  }
  if (e.floor_us && e.stats.n > 0 && e.stats.min < *e.floor_us) {
    j.verdict = Verdict{Outcome::integrity,
                        fmt::format("timing {}: a timed sample took {:.2f} µs, below the roofline floor of {:.2f} µs "
                                    "(its FLOPs at the tensor peak, its bytes at the memory peak): the time did not "
                                    "measure the work",
                                    e.bench, e.stats.min, *e.floor_us)};
    return j;
  }
  if (j.probes && !j.probes->pass()) {
    const RepeatProbeFigures& p = *j.probes;
    j.verdict = Verdict{Outcome::integrity,
                        fmt::format("timing {}: {} launches that repeated a timed sample's inputs ran {:.1f} µs faster "
                                    "than those samples (median {:.1f} against {:.1f} µs), beyond the {:.1f} µs the "
                                    "timing spread allows: the kernel skips work it has seen (result cache or replay)",
                                    e.bench, p.n, p.gain_us, p.repeat_median_us, p.fresh_median_us, p.limit_us)};
  }
  return j;
}

}  // namespace evo
