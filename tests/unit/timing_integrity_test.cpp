// Timing integrity without a GPU: the timing loop's facts as the parent decodes them (untrusted
// input), and the rules over them (gates/timing_integrity.h) with fake evidence: a failed timed
// sample is `integrity` when an isolated launch is right and `correctness` when it is wrong too,
// the repeat probes' limit follows the timed spread, and no time below the roofline floor passes.
#include "gates/timing_integrity.h"

#include <gtest/gtest.h>

#include "gpu/worker_events.h"
#include "policy/config.h"
#include "run/plan.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

const Shape kShape{8, 32, 32, 2048, 2048, 64, Layout::bhsd, ""};  // long-smoke at D=64

DeviceCheckFacts clean(uint64_t n) {
  DeviceCheckFacts f;
  f.n = n;
  f.max_abs = 4e-4;
  f.err2 = 1e-6 * double(n);
  f.ref2 = 0.5 * double(n);  // relative L2 1.4e-3: inside fp16's 2e-3
  return f;
}

// `bad` elements wrong from row 3 on, as a row check of 128 rows reports them.
DeviceCheckFacts wrong_rows(uint64_t bad) {
  DeviceCheckFacts f = clean(128 * 64);
  f.bad = bad;
  f.first_fail = 3 * 64 + 5;
  f.max_abs = 0.8;
  f.extent = uint64_t(kShape.elements(kShape.heads_q, kShape.seq_q));
  return f;
}

SampleStats timed_stats(double median, double spread) {
  SampleStats s;
  s.n = 40;
  s.median = s.mean = median;
  s.p10 = median - spread;
  s.p90 = median + spread;
  s.min = median - 1.5 * spread;
  s.max = median + 3 * spread;
  return s;
}

// An honest shape: 40 samples, rows clean, the last sample clean, probes as fast as the samples.
TimingEvidence honest() {
  TimingEvidence e;
  e.bench = "8x32x32x2048x2048x64";
  e.shape = kShape;
  e.stats = timed_stats(1000, 5);
  e.timed_tol = {0.003, 0.003, 0.002};
  e.fresh_tol = {0.7, 0.003, 0.002};
  e.fresh_inputs = "large_v";
  e.floor_us = 220;
  TimingFacts& f = e.facts;
  f.samples = 40;
  f.rows_per_sample = 128;
  f.rows_checked = 39 * 128 + 4 * 128;
  f.rows = clean(39 * 128 * 64);
  f.full = {FullCheck{7, "drawn", "normal", 1001, true, clean(33554432)},
            FullCheck{39, "last", "large_v", 999, true, clean(33554432)}};
  f.probe_fresh_us = {1000, 1004, 997, 1002};
  f.probe_repeat_us = {1001, 1000, 999, 1003};
  return e;
}

TEST(TimingIntegrity, AnHonestShapePassesWithItsFigures) {
  const TimingJudgement j = judge_timing(honest(), VerdictPolicy{});
  EXPECT_FALSE(j.verdict) << j.verdict->reason;
  ASSERT_TRUE(j.probes);
  EXPECT_EQ(j.probes->n, 4);
  EXPECT_NEAR(j.probes->gain_us, -1.0, 1e-9);  // median of {-1, 4, -2, -1}
  EXPECT_NEAR(j.probes->fresh_median_us, 1001.0, 1e-9);
  EXPECT_NEAR(j.probes->repeat_median_us, 1000.5, 1e-9);
  // sigma 10 / 2.563; 4 x 1.2533 x sqrt(2) x sigma / 2 = 13.8 µs; 5 % of 1000 = 50 µs; + 1 µs slack
  EXPECT_NEAR(j.probes->limit_us, 51.0, 1e-9);
  ASSERT_TRUE(j.rows_rel_l2);
  EXPECT_NEAR(*j.rows_rel_l2, std::sqrt(2e-6), 1e-12);
}

TEST(TimingIntegrity, AWrongTimedSampleIsIntegrityWhenTheIsolatedLaunchIsRight) {
  TimingEvidence e = honest();
  e.facts.samples = 6;
  e.facts.failure = SampleFailure{5, "rows", "normal", wrong_rows(1600)};
  e.facts.isolated = FullCheck{-1, "isolated", "normal", 1000, true, clean(33554432)};
  const TimingJudgement j = judge_timing(e, VerdictPolicy{});
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->outcome, Outcome::integrity);
  EXPECT_EQ(j.verdict->reason,
            "timing 8x32x32x2048x2048x64: timed sample 6 of 6 (128 query rows drawn at run time): 1600 of 8192 "
            "elements beyond atol 0.003 + rtol 0.003·|ref| (max abs error 0.8); first at b=0 h=0 s=3 d=5 (element "
            "197); an isolated launch on fresh inputs is right: the timed launches did not do the work");
}

TEST(TimingIntegrity, AWrongTimedSampleIsCorrectnessWhenTheIsolatedLaunchIsWrongToo) {
  TimingEvidence e = honest();
  e.facts.failure = SampleFailure{0, "rows", "normal", wrong_rows(900)};
  DeviceCheckFacts wrong = clean(33554432);
  wrong.unwritten = 4096;
  wrong.first_fail = 0;
  e.facts.isolated = FullCheck{-1, "isolated", "normal", 1000, true, wrong};
  auto v = judge_timing(e, VerdictPolicy{}).verdict;
  ASSERT_TRUE(v);
  EXPECT_EQ(v->outcome, Outcome::correctness);
  EXPECT_NE(v->reason.find("an isolated launch on fresh normal inputs: 4096 of 33554432 output elements never written"),
            std::string::npos)
      << v->reason;
  // Inputs changed during a sample, and again when not timed: correctness; only when timed: integrity.
  e.facts.failure = SampleFailure{2, "inputs", "normal", DeviceCheckFacts{}};
  e.facts.isolated->facts = clean(33554432);
  e.facts.isolated->inputs_intact = false;
  v = judge_timing(e, VerdictPolicy{}).verdict;
  EXPECT_EQ(v->outcome, Outcome::correctness);
  EXPECT_NE(v->reason.find("timed sample 3 of 40 (its inputs): modified its inputs"), std::string::npos) << v->reason;
  e.facts.isolated->inputs_intact = true;
  EXPECT_EQ(judge_timing(e, VerdictPolicy{}).verdict->outcome, Outcome::integrity);
  // A failure without the isolated launch (the worker died first) is never let through.
  e.facts.isolated.reset();
  v = judge_timing(e, VerdictPolicy{}).verdict;
  EXPECT_EQ(v->outcome, Outcome::correctness);
  EXPECT_NE(v->reason.find("modified its inputs; no isolated launch ran"), std::string::npos) << v->reason;
}

TEST(TimingIntegrity, TheLastSampleIsJudgedWithItsOwnDistributionsTolerance) {
  TimingEvidence e = honest();
  DeviceCheckFacts large_v = clean(33554432);
  large_v.bad = 10;  // judged with large_v's atol, 0.7, the counts say bad: still a failure
  large_v.first_fail = 64;
  large_v.max_abs = 2.0;
  e.facts.failure = SampleFailure{39, "full", "large_v", large_v};
  e.facts.isolated = FullCheck{-1, "isolated", "large_v", 1000, true, clean(33554432)};
  auto v = judge_timing(e, VerdictPolicy{}).verdict;
  ASSERT_TRUE(v);
  EXPECT_EQ(v->outcome, Outcome::integrity);
  EXPECT_NE(v->reason.find("(every output element): 10 of 33554432 elements beyond atol 0.7"), std::string::npos)
      << v->reason;
}

TEST(TimingIntegrity, NumericsGuardsFloorAndProbesInTheirOrder) {
  TimingEvidence e = honest();
  e.facts.rows.err2 = 0.01 * e.facts.rows.ref2;  // relative L2 0.1, no element beyond atol + rtol
  auto v = judge_timing(e, VerdictPolicy{}).verdict;
  ASSERT_TRUE(v);
  EXPECT_EQ(v->outcome, Outcome::correctness);
  EXPECT_NE(v->reason.find("the query rows checked after 40 timed samples: relative L2 error 0.1 above 0.002"),
            std::string::npos)
      << v->reason;

  e = honest();
  e.facts.full[0].facts.err2 = e.facts.full[0].facts.ref2;  // the drawn sample: relative L2 1
  v = judge_timing(e, VerdictPolicy{}).verdict;
  ASSERT_TRUE(v);
  EXPECT_NE(v->reason.find("timed sample 8 of 40 (every element): relative L2 error 1 above 0.002"), std::string::npos)
      << v->reason;
  e.facts.full[0] = e.facts.full[1];  // the last sample is judged as the benchmark's post-timing check, not here
  e.facts.full[0].facts.err2 = e.facts.full[0].facts.ref2;
  EXPECT_FALSE(judge_timing(e, VerdictPolicy{}).verdict);

  e = honest();
  e.facts.guards_intact = false;
  EXPECT_EQ(judge_timing(e, VerdictPolicy{}).verdict->reason,
            "timing 8x32x32x2048x2048x64: wrote outside its buffers (guard bytes changed)");

  e = honest();
  e.stats.min = 219.0;  // one sample faster than the hardware can go
  v = judge_timing(e, VerdictPolicy{}).verdict;
  ASSERT_TRUE(v);
  EXPECT_EQ(v->outcome, Outcome::integrity);
  EXPECT_NE(v->reason.find("took 219.00 µs, below the roofline floor of 220.00 µs"), std::string::npos) << v->reason;
  e.floor_us.reset();  // a GPU without peaks in gates.json: no floor
  EXPECT_FALSE(judge_timing(e, VerdictPolicy{}).verdict);
}

TEST(TimingIntegrity, RepeatProbesCatchTwentyPercentAndFollowTheSpread) {
  TimingEvidence e = honest();
  e.facts.probe_repeat_us = {800, 805, 797, 801};  // 20 % of the tiles replayed on repeated inputs
  auto j = judge_timing(e, VerdictPolicy{});
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->outcome, Outcome::integrity);
  EXPECT_EQ(j.verdict->reason,
            "timing 8x32x32x2048x2048x64: 4 launches that repeated a timed sample's inputs ran 200.0 µs faster than "
            "those samples (median 800.5 against 1001.0 µs), beyond the 51.0 µs the timing spread allows: the kernel "
            "skips work it has seen (result cache or replay)");
  // 4 % faster: inside the 5 % floor of the limit.
  e.facts.probe_repeat_us = {960, 964, 957, 962};
  EXPECT_FALSE(judge_timing(e, VerdictPolicy{}).verdict);
  // A noisy shape widens the limit with its spread (p10..p90 of ±200 µs): 20 % is then noise.
  e.stats = timed_stats(1000, 200);
  e.facts.probe_repeat_us = {800, 805, 797, 801};
  j = judge_timing(e, VerdictPolicy{});
  EXPECT_FALSE(j.verdict);
  EXPECT_GT(j.probes->limit_us, 200);
  // A tiny shape: the slack covers launch jitter.
  e = honest();
  e.stats = timed_stats(10, 0.05);
  e.floor_us = 1;
  e.facts.probe_fresh_us = {10, 10.2, 9.9, 10.1};
  e.facts.probe_repeat_us = {9.0, 9.1, 9.2, 9.0};
  EXPECT_FALSE(judge_timing(e, VerdictPolicy{}).verdict);  // 1 µs gain, limit 0.5 + 1
}

// Four pairs are few: a slow stretch that hits the paired samples is not a replay when the repeats
// are no faster than the timed samples as a whole (H200, 2026-11-30, an honest split_kv screen:
// pairs 40.0 µs, 401 samples' median 33.4 µs, p10..p90 32.9..34.5, repeats 33.2).
TEST(TimingIntegrity, APairedSlowStretchIsNotAReplay) {
  TimingEvidence e = honest();
  e.stats = timed_stats(33.44, 0.8);
  e.stats.p10 = 32.93;
  e.stats.p90 = 34.50;
  e.floor_us = 14.0;
  e.facts.probe_fresh_us = {39.9, 40.1, 39.8, 40.3};
  e.facts.probe_repeat_us = {33.1, 33.3, 33.2, 33.3};
  auto j = judge_timing(e, VerdictPolicy{});
  ASSERT_TRUE(j.probes);
  EXPECT_GT(j.probes->gain_us, j.probes->limit_us) << "the pairs alone would call it a replay";
  EXPECT_FALSE(j.verdict) << j.verdict->reason;
  EXPECT_TRUE(j.probes->pass());
  // A replay is faster than the timed median too: still caught.
  e.facts.probe_repeat_us = {27.0, 27.2, 26.9, 27.1};
  j = judge_timing(e, VerdictPolicy{});
  ASSERT_TRUE(j.verdict);
  EXPECT_EQ(j.verdict->outcome, Outcome::integrity);
}

TEST(TimingIntegrity, FactsRoundTripAndMalformedOnesAreRefused) {
  TimingFacts f = honest().facts;
  f.failure = SampleFailure{5, "rows", "normal", wrong_rows(3)};
  f.isolated = FullCheck{-1, "isolated", "normal", 1000, true, clean(100)};
  std::string error;
  auto back = timing_facts_from_json(to_json(f), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(to_json(*back), to_json(f));
  auto refused = [](json j) {
    std::string why;
    EXPECT_FALSE(timing_facts_from_json(j, why)) << j.dump();
    return why;
  };
  json j = to_json(f);
  j["samples"] = -1;
  EXPECT_EQ(refused(j), "timing integrity: samples is not an integer in range");
  j = to_json(f);
  j["probe_repeat_us"].push_back(3.0);
  EXPECT_EQ(refused(j), "timing integrity: probe_fresh_us and probe_repeat_us differ in length");
  j = to_json(f);
  j["failure"]["what"] = "nothing";
  EXPECT_EQ(refused(j), "timing integrity: what is not one of its names");
  j = to_json(f);
  j["full"][0]["facts"]["bad"] = "7";
  EXPECT_EQ(refused(j), "device_check.bad is not a count");
  j = to_json(f);
  j["rows"]["first_fail"] = 1LL << 40;  // beyond the output it indexes
  EXPECT_EQ(refused(j), "device_check.first_fail is not -1 or an element index");
  EXPECT_EQ(refused(json::array()), "timing integrity: not an object");

  // On the wire: only a timing event carries them; a post_done carries counts, not a file.
  const json timing = {{"event", "timing"}, {"bench", "b"}, {"stats", json::object()}, {"integrity", to_json(f)}};
  const DecodedWorkerEvent d = decode_worker_event(timing.dump());
  ASSERT_TRUE(d.event) << d.error;
  ASSERT_TRUE(d.event->integrity);
  EXPECT_EQ(to_json(*d.event->integrity), to_json(f));
  EXPECT_EQ(decode_worker_event(encode_worker_event(*d.event)).event->fields["integrity"], to_json(f));
  const DecodedWorkerEvent misplaced =
      decode_worker_event(json{{"event", "post_done"}, {"bench", "b"}, {"us", 1}, {"integrity", to_json(f)}}.dump());
  EXPECT_FALSE(misplaced.event);
  const WorkerEvent post = post_done_event("b", f.full[0], true);
  const DecodedWorkerEvent p = decode_worker_event(encode_worker_event(post));
  ASSERT_TRUE(p.event) << p.error;
  EXPECT_TRUE(p.event->out.empty());
  ASSERT_TRUE(p.event->device_check);
  EXPECT_EQ(p.event->us, 1001);
  EXPECT_EQ(p.event->fields["why"], "drawn");
}

TEST(TimingIntegrity, ThresholdsTheFloorAndBenchTolerancesComeFromGatesJson) {
  const GatesConfig g = test::repo_gates();
  EXPECT_EQ(g.timing.rows_per_sample, 128);
  EXPECT_EQ(g.timing.repeat_probes, 4);
  // H200, fp16-d64, mission 1x8x8x512x512: 5.4e8 FLOPs at 1070.5 TFLOP/s = 0.50 µs; its 2.1 MB at
  // 4.8 TB/s = 0.44 µs.
  const Task t = parse_task("fp16-d64");
  const auto floor = g.floor_us("nvidia-h200", t, Shape{1, 8, 8, 512, 512, 64, Layout::bhsd, ""});
  ASSERT_TRUE(floor);
  EXPECT_NEAR(*floor, 4.0 * 8 * 512 * 512 * 64 / 1070.5e12 * 1e6, 1e-9);
  // A memory-bound shape: decode, one query row over 16k keys.
  const Shape decode{1, 8, 8, 1, 16384, 128, Layout::bhsd, ""};
  const double bytes = 2.0 * (8 * 128 + 2.0 * 8 * 16384 * 128) + 2.0 * 8 * 128;
  EXPECT_NEAR(*g.floor_us("nvidia-h200", parse_task("bf16-d128"), decode), bytes / 4.8e12 * 1e6, 1e-9);
  // Causal (top-left): the one query row sees key 0 only, so K and V count one row, not 16k:
  // the floor of a causal decode step is not the cache's bytes (an honest kernel that skips the
  // masked tiles beat that floor on the H200, 2026-11-27).
  const double causal_bytes = 2.0 * (8 * 128 + 2.0 * 8 * 1 * 128) + 2.0 * 8 * 128;
  const double causal_floor = std::max(causal_bytes / 4.8e12 * 1e6, decode.flops(true) / 1070.5e12 * 1e6);
  EXPECT_LT(*g.floor_us("nvidia-h200", parse_task("bf16-d128-causal"), decode), 0.01);
  EXPECT_NEAR(*g.floor_us("nvidia-h200", parse_task("bf16-d128-causal"), decode), causal_floor, 1e-3);
  EXPECT_FALSE(g.floor_us("nvidia-rtx-4090", t, decode)) << "no peaks in gates.json: no floor";
  EXPECT_FALSE(g.floor_us("nvidia-a100-sxm4-80gb", parse_task("fp8-d64"), decode)) << "no fp8 peak on an A100";

  auto j = json::parse(test::read_text(test::source_root() / "gates" / "gates.json"));
  j["roofline"]["nvidia-h200"]["tensor_tflops"]["fp4"] = 5000;
  EXPECT_THROW(parse_gates_config(j.dump(), "test"), std::exception);
  j = json::parse(test::read_text(test::source_root() / "gates" / "gates.json"));
  j["timing"]["repeat_probes"] = 10;  // min_samples 10: at most 9 distinct samples besides the drawn one
  EXPECT_THROW(parse_gates_config(j.dump(), "test"), std::exception);

  // Every benchmark case is checked on the GPU with its distribution's tolerance; none needs a
  // reference file.
  const EvalPlan plan = make_plan(g, {t, {"small"}, g.benchmark_sets, {0}, false, std::nullopt});
  ASSERT_EQ(plan.bench.size(), 5u);
  for (const BenchSpec& b : plan.bench)
    for (const CaseSpec* c : {&b.timed, &b.fresh}) {
      EXPECT_TRUE(c->device_check.on) << c->id;
      EXPECT_EQ(c->device_check.atol, g.tolerance(t, c->inputs).atol) << c->id;
    }
  EXPECT_EQ(reference_cases(plan).size(), plan.gate_cases.size());
}

}  // namespace
}  // namespace evo
