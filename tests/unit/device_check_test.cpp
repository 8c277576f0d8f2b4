// Cases checked on the GPU (the `huge` set, the sampled cases): which cases the plan sends there, the watchdog
// sized by their work, the worker's report decoded as untrusted input, the parent's verdict
// over its counts, and the job rules (counts, never a file, only where asked).
#include <gtest/gtest.h>

#include "core/errors.h"
#include "gates/correctness.h"
#include "gpu/worker_events.h"
#include "policy/config.h"
#include "run/job_events.h"
#include "run/large_cases.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

DeviceCheckFacts passing_facts() {
  DeviceCheckFacts f;
  f.n = 2147616768;
  f.max_abs = 1e-3;
  f.err2 = 1e-2;
  f.ref2 = 1e6;
  f.seconds = 3.5;
  f.reference_s = 1.2;
  f.device_bytes = 27000000000ull;
  return f;
}

TEST(DeviceCheck, TheHugeSetAndTheSampledCasesAreCheckedOnTheGpuAndNeedNoReferenceFile) {
  const GatesConfig g = test::repo_gates();
  ASSERT_TRUE(g.sampled.device_check);
  for (const char* task : {"fp16-d64", "bf16-d128", "fp16-d64-causal"}) {
    const Task t = parse_task(task);
    const EvalPlan normal = make_plan(g, {t, g.gate_sets, {"mission"}, g.seeds, false, 12345u});
    ASSERT_GT(normal.sampled_cases, 0u);
    for (const auto& c : normal.gate_cases) EXPECT_EQ(c.device_check.on, is_sampled_case(c.id)) << c.id;
    EXPECT_EQ(reference_cases(normal).size(), normal.gate_cases.size() - normal.sampled_cases);  // bench: on the GPU
    const EvalPlan huge = make_plan(g, {t, {"huge"}, {"mission"}, {0, 1, 2}, false, 12345u});
    size_t on = 0;
    for (const auto& c : huge.gate_cases) {
      if (!c.device_check.on || is_sampled_case(c.id)) continue;
      ++on;
      EXPECT_EQ(c.id.rfind("huge/", 0), 0u) << c.id;
      EXPECT_GT(c.shape.elements(c.shape.heads_q, c.shape.seq_q), int64_t(1) << 31) << c.id;
      EXPECT_EQ(c.device_check.atol, g.tolerance(t, c.inputs).atol) << c.id;
      EXPECT_EQ(c.device_check.rtol, g.tolerance(t, c.inputs).rtol) << c.id;
    }
    EXPECT_EQ(on, 1u) << task << ": the huge shape runs once, whatever the seeds and distributions";
    for (const auto& c : reference_cases(huge))
      EXPECT_FALSE(c.device_check.on) << c.id << " would be written as a file";
  }
  // With sampled.device_check off, sampled cases go through files again.
  GatesConfig off = g;
  off.sampled.device_check = false;
  const EvalPlan host = make_plan(off, {parse_task("fp16-d64"), off.gate_sets, {"mission"}, off.seeds, false, 7u});
  for (const auto& c : host.gate_cases) EXPECT_FALSE(c.device_check.on) << c.id;
}

TEST(DeviceCheck, TheWatchdogGrowsWithTheWorkAndKeepsItsFloor) {
  const GatesConfig g = test::repo_gates();
  const Task t = parse_task("fp16-d64");
  const EvalPlan plan = make_plan(g, {t, {"small", "huge"}, {"mission"}, {0}, false, 99u});
  double small_max = 0, huge_min = 1e300;
  for (const auto& c : plan.gate_cases) {
    const double s = gate_case_limit_s(c, t, g.limits);
    EXPECT_GE(s, g.limits.gate_case_s) << c.id;
    if (c.id.rfind("huge/", 0) == 0)
      huge_min = std::min(huge_min, s);
    else if (c.id.rfind("small/", 0) == 0)
      small_max = std::max(small_max, s);
  }
  EXPECT_LT(small_max, g.limits.gate_case_s + 0.1) << "a small case keeps the fixed limit";
  // 1.1e12 FLOPs x 3 at 2e11 FLOP/s, 26 GB at 2e10 B/s: about 28 s, bounded (a hang is still killed).
  EXPECT_GT(huge_min, g.limits.gate_case_s + 15);
  EXPECT_LT(huge_min, 60);
}

TEST(DeviceCheck, ReportsRoundTripAndMalformedOnesAreRefused) {
  const DeviceCheckFacts f = passing_facts();
  std::string error;
  auto back = device_check_from_json(to_json(f), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(to_json(*back), to_json(f));
  auto refused = [](json j) {
    std::string why;
    EXPECT_FALSE(device_check_from_json(j, why)) << j.dump();
    return why;
  };
  json j = to_json(f);
  j["bad"] = -1;
  EXPECT_EQ(refused(j), "device_check.bad is not a count");
  j = to_json(f);
  j["unwritten"] = f.n + 1;
  EXPECT_EQ(refused(j), "device_check counts do not add up");
  j = to_json(f);
  j["bad"] = 5;  // failures without a first failing element
  EXPECT_EQ(refused(j), "device_check counts do not add up");
  j = to_json(f);
  j["first_fail"] = f.n;
  EXPECT_EQ(refused(j), "device_check.first_fail is not -1 or an element index");
  j = to_json(f);
  j["err2"] = "0";
  EXPECT_EQ(refused(j), "device_check.err2 is not a finite non-negative number");
  EXPECT_EQ(refused(json::array()), "device_check is not an object");

  // In an event: a case_done may carry counts instead of a file, nothing else may.
  const std::string ok = json{{"event", "case_done"}, {"case", "huge/0"}, {"device_check", to_json(f)}}.dump();
  const DecodedWorkerEvent d = decode_worker_event(ok);
  ASSERT_TRUE(d.event) << d.error;
  ASSERT_TRUE(d.event->device_check);
  EXPECT_TRUE(d.event->out.empty());
  const DecodedWorkerEvent again = decode_worker_event(encode_worker_event(*d.event));
  ASSERT_TRUE(again.event) << again.error;
  EXPECT_EQ(to_json(*again.event->device_check), to_json(f));
  EXPECT_FALSE(decode_worker_event(json{{"event", "case_done"}, {"case", "huge/0"}}.dump()).event);
  EXPECT_TRUE(
      decode_worker_event(json{{"event", "post_done"}, {"bench", "b"}, {"us", 1}, {"device_check", to_json(f)}}.dump())
          .event);  // a benchmark shape's check (gpu/timing_loop.h)
  const DecodedWorkerEvent bad =
      decode_worker_event(json{{"event", "timing"}, {"bench", "b"}, {"device_check", to_json(f)}}.dump());
  EXPECT_FALSE(bad.event);
  EXPECT_EQ(bad.error, "device_check outside a case_done or post_done in a 'timing' event");
}

TEST(DeviceCheck, TheVerdictOverCountsIsTheVerdictOverAFileAndNamesTheElement) {
  const GatesConfig g = test::repo_gates();
  const Task t = parse_task("fp16-d64");
  const Tolerance& tol = g.tolerance(t, "normal");
  Shape s = parse_shape("8129x32x32x129x129x64", 64);
  EXPECT_TRUE(check_counts(passing_facts(), tol, s).pass);

  DeviceCheckFacts f = passing_facts();
  f.unwritten = 133120;
  f.first_fail = 2147483648;  // element 2^31 of BHSD 8129x32x129x64: row 2^25 = (8128 * 32 + 15) * 129 + 113
  OutputCheck c = check_counts(f, tol, s);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.reason,
            "133120 of 2147616768 output elements never written (poison left); first at b=8128 h=15 s=113 d=0 "
            "(element 2147483648)");
  f = passing_facts();
  f.err2 = 1e6 * tol.rel_l2 * tol.rel_l2 * 4;  // relative L2 = 2 x the tolerance
  c = check_counts(f, tol, s);
  EXPECT_FALSE(c.pass);
  EXPECT_NE(c.reason.find("relative L2 error"), std::string::npos) << c.reason;
}

TEST(DeviceCheck, ACaseCheckedOnTheGpuReportsCountsNeverAFile) {
  WorkerJob job;
  CaseSpec huge, small;
  huge.id = "huge/0";
  huge.out_path = "/w/gate0.out";
  huge.device_check.on = true;
  small.id = "small/0";
  small.out_path = "/w/gate1.out";
  job.cases = {huge, small};
  WorkerEvent e;
  e.kind = WorkerEventKind::case_done;
  e.case_id = "huge/0";
  e.device_check = passing_facts();
  EXPECT_FALSE(foreign_event(job, e));
  e.out = "/w/gate0.out";
  EXPECT_EQ(foreign_event(job, e).value_or(""), "case huge/0: an output file for a case checked on the GPU");
  e.out.clear();
  e.device_check.reset();
  EXPECT_EQ(foreign_event(job, e).value_or(""), "case huge/0: no GPU check for a case checked on the GPU");
  e.case_id = "small/0";
  e.out = "/w/gate1.out";
  EXPECT_FALSE(foreign_event(job, e));
  e.device_check = passing_facts();
  EXPECT_EQ(foreign_event(job, e).value_or(""), "case small/0: a GPU check it was not asked for");
}

TEST(DeviceCheck, BadLimitsAreOneLineUsageErrors) {
  json j = json::parse(test::read_text(test::source_root() / "gates" / "gates.json"));
  j["limits"]["watchdog_flops_per_s"] = 0;
  try {
    parse_gates_config(j.dump(), "gates.json");
    FAIL() << "a zero rate must be refused";
  } catch (const EvoError& e) {
    EXPECT_EQ(std::string(e.what()),
              "gates.json limits: device_check_elements and the watchdog_* rates must be positive");
  }
  j["limits"]["watchdog_flops_per_s"] = "fast";
  EXPECT_THROW(parse_gates_config(j.dump(), "gates.json"), EvoError);
  j["limits"]["watchdog_flops_per_s"] = 2e11;
  EXPECT_EQ(parse_gates_config(j.dump(), "gates.json").limits.reference_kernel, "tiled");
  j["limits"]["reference_kernel"] = "rowwise";
  EXPECT_EQ(parse_gates_config(j.dump(), "gates.json").limits.reference_kernel, "rowwise");
  j["limits"].erase("reference_kernel");  // a gates.json without the field: the tiled kernel
  EXPECT_EQ(parse_gates_config(j.dump(), "gates.json").limits.reference_kernel, "tiled");
  j["limits"]["reference_kernel"] = "fast";
  try {
    parse_gates_config(j.dump(), "gates.json");
    FAIL() << "an unknown reference kernel must be refused";
  } catch (const EvoError& e) {
    EXPECT_EQ(std::string(e.what()),
              "gates.json limits.reference_kernel is \"fast\": it must be \"rowwise\" or \"tiled\"");
  }
}

}  // namespace
}  // namespace evo
