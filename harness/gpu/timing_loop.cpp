#include "gpu/timing_loop.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gpu/nvml.h"

namespace evo {

using namespace worker_device;
using nlohmann::json;

namespace {

// One sample's facts on the device: the row checks of its output (and of the repeat probe's),
// and the keyed hash of its inputs before the launch and after it.
struct SampleSums {
  DeviceCompareSums rows, probe_rows;
  unsigned long long hash_before, hash_after;
};

bool failed(const DeviceCheckFacts& f) { return f.unwritten + f.nonfinite + f.bad > 0; }

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

class ShapeTimer {
 public:
  ShapeTimer(const TimingRig& rig, Problem& p, const BenchSpec& b)
      : rig_(rig), p_(p), b_(b), sums_(sizeof(SampleSums)), rng_(std::random_device{}()) {}

  ShapeTiming run();
  FullCheck shape_check() { return launch_and_check(b_.fresh, "shape"); }

 private:
  struct Sample {
    double us = 0, probe_us = 0;
    SampleSums sums{};
    std::optional<FullCheck> full;  // the sample at the drawn index, and the last
  };

  // A counter no launch has used: 0 would give the fixed cases' inputs.
  uint64_t nonce() { return rng_() | 1; }
  double timed_launch(Params& a);
  bool warm_up(Params& a, ShapeTiming& out);
  DeviceCheckFacts check_rows_now(const CaseSpec& c);
  void isolate(TimingFacts& f, const CaseSpec& c);
  Sample sample(const CaseSpec& c, bool probe, bool full);
  void verify(Sample& s, const CaseSpec& c, bool probe, bool full);
  FullCheck launch_and_check(const CaseSpec& c, const char* why);
  DeviceCheckFacts rows_of(const DeviceCompareSums& sums) const;
  std::optional<SampleFailure> judge(int i, const Sample& s) const;
  bool record(ShapeTiming& out, int i, Sample& s, const CaseSpec& c, bool probe, const char* full);
  void launch_bound_times(Params& a, json& extra);
  double graph_time(Params& a, int n);

  const TimingRig& rig_;
  Problem& p_;
  const BenchSpec& b_;
  Scratch sums_;
  std::unique_ptr<Scratch> copy_;  // the fresh sample's output while its repeat probe runs
  std::mt19937_64 rng_;
};

// L2 flushed (twice its size written), then the launch between two events.
double ShapeTimer::timed_launch(Params& a) {
  check(cu().cuMemsetD8Async(rig_.flush, 0x5A, rig_.flush_bytes, rig_.stream), "L2 flush", "runtime");
  check(cu().cuEventRecord(rig_.e0, rig_.stream), "cuEventRecord");
  rig_.launch(a);
  check(cu().cuEventRecord(rig_.e1, rig_.stream), "cuEventRecord");
  check(cu().cuEventSynchronize(rig_.e1), "evo_attn_fwd (timed)");
  return ms_between(rig_.e0, rig_.e1) * 1000.0;  // µs
}

// Warm-up launches on the case's own inputs, each over a fresh pre-fill (its output would be
// the answer already); those the draw picks (gpu/launch_draws.h) are verified like a timed
// sample, by rows drawn after the launch. False when one failed (the isolated launch has run).
bool ShapeTimer::warm_up(Params& a, ShapeTiming& out) {
  const auto w0 = std::chrono::steady_clock::now();
  int warm = 0, verified = 0;
  bool ok = true;
  while (ok && (elapsed_ms(w0) < rig_.job.timing.warmup_ms || warm < 3)) {
    p_.prefill_async(rig_.support, rig_.draws.prefill(LaunchKind::warm_up), rig_.stream);
    timed_launch(a);
    ++warm;
    if (!rig_.draws.verify(LaunchKind::warm_up)) continue;
    ++verified;
    const DeviceCheckFacts rows = timed("verify", [&] { return check_rows_now(b_.timed); });
    if (!failed(rows)) continue;
    out.facts.failure = SampleFailure{warm - 1, "warm_up", b_.timed.inputs, rows};
    isolate(out.facts, b_.timed);
    ok = false;
  }
  out.extra["warmup_launches"] = warm;
  out.facts.warm_up_verified = verified;
  return ok;
}

// `rows_per_sample` rows of the output as it stands, drawn now (waits).
DeviceCheckFacts ShapeTimer::check_rows_now(const CaseSpec& c) {
  const SampleSums init{empty_compare_sums(), empty_compare_sums(), 0, 0};
  check(cu().cuMemcpyHtoDAsync(sums_.ptr, &init, sizeof(init), rig_.stream), "warm-up facts init", "runtime");
  rig_.checker.check_rows_async(p_, p_.dout, c.device_check.atol, c.device_check.rtol, rig_.job.timing.rows_per_sample,
                                rng_(), sums_.ptr + offsetof(SampleSums, rows));
  check(cu().cuStreamSynchronize(rig_.stream), "checks of a warm-up launch", "runtime");
  SampleSums got{};
  check(cu().cuMemcpyDtoH(&got, sums_.ptr, sizeof(got)), "warm-up facts readback", "runtime");
  return rows_of(got.rows);
}

// After a pause no back-to-back detector survives: wrong there too means wrong on the shape.
void ShapeTimer::isolate(TimingFacts& f, const CaseSpec& c) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(rig_.job.timing.isolation_pause_ms));
  f.isolated = launch_and_check(c, "isolated");
}

// New inputs (c's distribution, a fresh counter), their hash, the pre-fill (drawn: random
// values or the previous sample's output), the timed launch; a repeat probe relaunches on the
// same inputs after keeping the first output aside and pre-filling O again.
ShapeTimer::Sample ShapeTimer::sample(const CaseSpec& c, bool probe, bool full) {
  Sample s;
  const uint64_t n = nonce();
  timed("fill", [&] { p_.fill(rig_.support, c, rig_.stream, n); });
  const SampleSums init{empty_compare_sums(), empty_compare_sums(), 0, 0};
  check(cu().cuMemcpyHtoDAsync(sums_.ptr, &init, sizeof(init), rig_.stream), "sample facts init", "runtime");
  rig_.checker.hash_inputs_async(p_, sums_.ptr + offsetof(SampleSums, hash_before));
  Params a = rig_.params();
  p_.prefill_async(rig_.support, rig_.draws.prefill(LaunchKind::timed), rig_.stream);
  s.us = timed_launch(a);
  if (probe) {
    if (!copy_) copy_ = std::make_unique<Scratch>(p_.o.bytes);
    check(cu().cuMemcpyDtoDAsync(copy_->ptr, p_.o.data(), p_.o.bytes, rig_.stream), "output copy", "runtime");
    p_.prefill_async(rig_.support, rig_.draws.prefill(LaunchKind::probe_repeat), rig_.stream);
    s.probe_us = timed_launch(a);
  }
  rig_.checker.hash_inputs_async(p_, sums_.ptr + offsetof(SampleSums, hash_after));
  timed("verify", [&] { verify(s, c, probe, full); });
  return s;
}

// Rows drawn now, after the launch, by a key only this process knows; every row of a fully
// checked sample instead. Then the facts come back.
void ShapeTimer::verify(Sample& s, const CaseSpec& c, bool probe, bool full) {
  const int rows = rig_.job.timing.rows_per_sample;
  const double atol = c.device_check.atol, rtol = c.device_check.rtol;
  TensorDesc fresh_out = p_.dout;
  if (probe) fresh_out.data = copy_->ptr + (p_.dout.data - p_.o.data());  // same layout, kept aside
  if (!full)
    rig_.checker.check_rows_async(p_, fresh_out, atol, rtol, rows, rng_(), sums_.ptr + offsetof(SampleSums, rows));
  if (probe)
    rig_.checker.check_rows_async(p_, p_.dout, atol, rtol, rows, rng_(), sums_.ptr + offsetof(SampleSums, probe_rows));
  if (full) {
    s.full = FullCheck{};
    s.full->facts = rig_.checker.check_all_rows(p_, atol, rtol, rig_.job.timing.full_check_rows, rng_());  // waits
  }
  check(cu().cuStreamSynchronize(rig_.stream), "checks of a timed sample", "runtime");
  check(cu().cuMemcpyDtoH(&s.sums, sums_.ptr, sizeof(s.sums)), "sample facts readback", "runtime");
}

// One launch on fresh inputs of `c`, every output element compared with evo's reference.
FullCheck ShapeTimer::launch_and_check(const CaseSpec& c, const char* why) {
  FullCheck f;
  f.why = why;
  f.inputs = c.inputs;
  p_.fill(rig_.support, c, rig_.stream, nonce());
  const std::array<uint64_t, 3> before = rig_.checker.inputs(p_);
  Params a = rig_.params();
  p_.prefill_async(rig_.support,
                   rig_.draws.prefill(f.why == "isolated" ? LaunchKind::isolated : LaunchKind::shape_check),
                   rig_.stream);
  f.us = timed_launch(a);
  // Nothing of the candidate may still run when the inputs are hashed and referenced.
  check(cu().cuCtxSynchronize(), "evo_attn_fwd", "crash");
  f.inputs_intact = rig_.checker.inputs(p_) == before;
  f.facts = rig_.checker.check_all_rows(p_, c.device_check.atol, c.device_check.rtol, rig_.job.timing.full_check_rows,
                                        rng_());
  return f;
}

DeviceCheckFacts ShapeTimer::rows_of(const DeviceCompareSums& sums) const {
  DeviceCheckFacts f = facts_of(sums, uint64_t(rig_.job.timing.rows_per_sample) * p_.shape.head_dim);
  f.extent = uint64_t(p_.shape.elements(p_.shape.heads_q, p_.shape.seq_q));
  return f;
}

std::optional<SampleFailure> ShapeTimer::judge(int i, const Sample& s) const {
  if (s.sums.hash_before != s.sums.hash_after) return SampleFailure{i, "inputs", "", DeviceCheckFacts{}};
  if (s.full && failed(s.full->facts)) return SampleFailure{i, "full", "", s.full->facts};
  if (!s.full && failed(rows_of(s.sums.rows))) return SampleFailure{i, "rows", "", rows_of(s.sums.rows)};
  if (s.probe_us > 0 && failed(rows_of(s.sums.probe_rows)))
    return SampleFailure{i, "probe", "", rows_of(s.sums.probe_rows)};
  return std::nullopt;
}

// Adds sample i (inputs of `c`) to the facts; false when it failed (then the isolated launch has
// run). `full`: why its every element was checked ("drawn", "last"), or null.
bool ShapeTimer::record(ShapeTiming& out, int i, Sample& s, const CaseSpec& c, bool probe, const char* full) {
  TimingFacts& f = out.facts;
  const int rows = rig_.job.timing.rows_per_sample;
  if (!full) {
    add_facts(f.rows, rows_of(s.sums.rows));
    f.rows_checked += uint64_t(rows);
  }
  if (probe) {
    f.rows_checked += uint64_t(rows);
    f.probe_fresh_us.push_back(s.us);
    f.probe_repeat_us.push_back(s.probe_us);
  }
  if (full) {
    FullCheck& fc = *s.full;
    fc.sample = i;
    fc.why = full;
    fc.inputs = c.inputs;
    fc.us = s.us;
    fc.inputs_intact = s.sums.hash_before == s.sums.hash_after;
    f.full.push_back(fc);
    if (fc.why == std::string("last")) out.checked = fc;
  }
  f.failure = judge(i, s);
  if (!f.failure) return true;
  f.failure->inputs = c.inputs;
  f.inputs_intact = f.failure->what != "inputs";
  isolate(f, c);
  return false;
}

ShapeTiming ShapeTimer::run() {
  const TimingConfig& t = rig_.job.timing;
  ShapeTiming out;
  out.facts.rows_per_sample = t.rows_per_sample;
  Params a = rig_.params();
  if (!warm_up(a, out)) {
    out.stats = summarize(std::vector<double>{0.0});
    return out;
  }
  emit(phase_event("timing", "", b_.id));  // progress for the parent's watchdog (per event)
  const auto clock_before = nvml_sm_clock_mhz(rig_.job.device);
  // Drawn now, among the samples every shape runs (min_samples, then the last).
  const int first = std::max(1, t.min_samples);
  const int drawn = std::uniform_int_distribution<int>(0, first - 1)(rng_);
  std::set<int> probes;
  const int want = std::min(t.repeat_probes, first - 1);  // distinct samples besides the drawn one
  while (int(probes.size()) < want) {
    const int k = std::uniform_int_distribution<int>(0, first - 1)(rng_);
    if (k != drawn) probes.insert(k);
  }
  std::vector<double> times;
  const auto s0 = std::chrono::steady_clock::now();
  for (int i = 0; i < t.max_samples; ++i) {
    const bool is_drawn = i == drawn, probe = probes.count(i) > 0;
    Sample s = sample(b_.timed, probe, is_drawn);
    times.push_back(s.us);
    if (!record(out, i, s, b_.timed, probe, is_drawn ? "drawn" : nullptr)) break;
    const bool enough = int(times.size()) >= t.min_samples &&
                        (summarize(times).rse() <= t.target_rse || elapsed_ms(s0) > t.shape_budget_ms);
    if (!enough && i + 1 < t.max_samples) continue;
    // The last sample: inputs of the post-timing distribution, every element checked.
    emit(phase_event("timing", "", b_.id));
    Sample last = sample(b_.fresh, false, true);
    times.push_back(last.us);
    record(out, i + 1, last, b_.fresh, false, "last");
    break;
  }
  const auto clock_after = nvml_sm_clock_mhz(rig_.job.device);
  out.stats = summarize(times);
  out.facts.samples = int(times.size());
  out.facts.guards_intact = p_.guards_intact();
  out.extra["sm_clock_before_mhz"] = clock_before ? json(*clock_before) : json(nullptr);
  out.extra["sm_clock_after_mhz"] = clock_after ? json(*clock_after) : json(nullptr);
  if (!out.facts.failure && out.stats.median < t.launch_bound_us) launch_bound_times(a, out.extra);
  return out;
}

// Launch-bound shapes: back-to-back and CUDA-graph times on the last inputs (repeated inputs:
// figures for the record, never in the fitness).
void ShapeTimer::launch_bound_times(Params& a, json& extra) {
  const int n = rig_.job.timing.graph_launches;
  a = rig_.params();
  check(cu().cuEventRecord(rig_.e0, rig_.stream), "cuEventRecord");
  for (int i = 0; i < n; ++i) rig_.launch(a);
  check(cu().cuEventRecord(rig_.e1, rig_.stream), "cuEventRecord");
  check(cu().cuEventSynchronize(rig_.e1), "evo_attn_fwd (back-to-back)");
  extra["back_to_back_us"] = ms_between(rig_.e0, rig_.e1) * 1000.0 / n;
  extra["graph_us"] = graph_time(a, n);
}

double ShapeTimer::graph_time(Params& a, int n) {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  check(cu().cuStreamBeginCapture(rig_.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "graph capture", "runtime");
  for (int i = 0; i < n; ++i) rig_.launch(a);
  check(cu().cuStreamEndCapture(rig_.stream, &graph), "graph capture", "runtime");
  check(cu().cuGraphInstantiate(&exec, graph, 0), "graph instantiate", "runtime");
  check(cu().cuGraphLaunch(exec, rig_.stream), "graph launch");
  check(cu().cuStreamSynchronize(rig_.stream), "evo_attn_fwd (graph warm-up)");
  std::vector<double> reps;
  for (int r = 0; r < 5; ++r) {
    check(cu().cuEventRecord(rig_.e0, rig_.stream), "cuEventRecord");
    check(cu().cuGraphLaunch(exec, rig_.stream), "graph launch");
    check(cu().cuEventRecord(rig_.e1, rig_.stream), "cuEventRecord");
    check(cu().cuEventSynchronize(rig_.e1), "evo_attn_fwd (graph)");
    reps.push_back(ms_between(rig_.e0, rig_.e1) * 1000.0 / n);
  }
  cu().cuGraphExecDestroy(exec);
  cu().cuGraphDestroy(graph);
  return summarize(reps).median;
}

}  // namespace

ShapeTiming time_shape(const TimingRig& rig, Problem& p, const BenchSpec& b) { return ShapeTimer(rig, p, b).run(); }

FullCheck check_shape(const TimingRig& rig, Problem& p, const BenchSpec& b) {
  return ShapeTimer(rig, p, b).shape_check();
}

}  // namespace evo
