// The run record as the evaluator builds it (run/run_record.h, run/evaluator.cpp), through the
// typed Record and its one writer: a whole evaluation against a fake worker (no GPU) gives a
// record with the fields of a committed record of a real H200 run, and it round-trips through
// the one reader and writer unchanged.
#include "run/run_record.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "compile/compile_record.h"
#include "core/stats.h"
#include "gpu/worker_events.h"
#include "run/evaluator.h"
#include "store/typed_record.h"
#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every key path of a JSON value ("gates.correctness.checks[].max_abs"); a list contributes
// the keys of its elements.
void key_paths(const json& j, const std::string& prefix, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      out.insert(prefix + k);
      key_paths(v, prefix + k + ".", out);
    }
  } else if (j.is_array()) {
    for (const auto& e : j) key_paths(e, prefix.substr(0, prefix.size() - 1) + "[].", out);
  }
}

// The key paths, without those under `skip` (prefixes): fields that depend on the kernel
// (its params, its SASS counts) or that a later layer adds.
std::set<std::string> fields_of(const json& record, const std::vector<std::string>& skip) {
  std::set<std::string> all, kept;
  key_paths(record, "", all);
  for (const auto& p : all) {
    bool skipped = false;
    for (const auto& s : skip) skipped = skipped || p.rfind(s, 0) == 0;
    if (!skipped) kept.insert(p);
  }
  return kept;
}

json committed_record(const std::string& file, int line) {
  return test::read_jsonl(test::source_root() / "results" / file).at(size_t(line));
}

// Everything one candidate's evaluation needs, on a tiny shape, with a fake `evo __worker`.
struct FakeEvaluation {
  fs::path dir = test::scratch_dir("run-record");
  GatesConfig gates = load_gates_config(test::source_root() / "gates" / "gates.json");
  ReferenceStore references{dir / "cache", dir / "support.cubin", "support-hash", Limits{}, 0};
  Variant variant;
  Candidate c;
  CompileResult compiled;
  EvalPlan plan;
  EvalEnv env;

  FakeEvaluation() {
    variant.id = "7-tma-ws/fake";
    variant.stage = 7;
    variant.path = "variants/7-tma-ws/fake.cu";
    variant.source = "// fake\n";
    variant.parent = "6-wgmma/wgmma";
    c.variant = &variant;
    c.params = {{"BLOCK_N", 64}};
    c.task = parse_task("fp16-d64");
    compiled.key = "cafe";
    compiled.seconds = 1.25;
    compiled.options = {"--gpu-architecture=sm_90a"};
    compiled.resources = PtxasResources{};
    compiled.launch = LaunchGeometry{};
    compiled.technique = TechniqueCounts{};
    compiled.verdict = Verdict{Outcome::ok, ""};
    plan.task = c.task;
    plan.gate_seed = 42;
    CaseSpec gate;
    gate.id = "small/1x2x2x64x64x64/s0/normal";
    gate.shape = parse_shape("1x2x2x64x64x64", 64);
    gate.shape.set = "small";
    plan.gate_cases.push_back(gate);
    BenchSpec bench;
    bench.id = "mission/1x2x2x64x64x64";
    bench.timed = gate;
    bench.timed.shape.set = "mission";
    bench.fresh = bench.timed;
    bench.fresh.id = "mission/1x2x2x64x64x64/s1000003/normal";
    bench.fresh.seed = 1000003;
    plan.bench.push_back(bench);
    env.gates = &gates;
    env.references = &references;
    env.support_cubin = dir / "support.cubin";
    env.work_root = dir / "work";
    env.gpu = GpuInfo{"NVIDIA H200", "nvidia-h200", "GPU-fake", 0, 90, 132, 13000};
    env.run_id = "20261123T000000Z-fake";
    env.nvrtc_version = "13.0";
  }

  // Reference outputs of 1.0 (FP32) for every case, the candidate's 1.0 (fp16) ready to copy.
  fs::path write_outputs() {
    const size_t n = size_t(plan.gate_cases[0].shape.elements(2, 64));
    std::string ref, out;
    for (size_t i = 0; i < n; ++i) ref += std::string("\x00\x00\x80\x3f", 4), out += std::string("\x00\x3c", 2);
    for (const auto& cs : reference_cases(plan)) {
      fs::create_directories(references.path_for(c.task, cs).parent_path());
      test::write_text(references.path_for(c.task, cs), ref);
    }
    test::write_text(dir / "good.out", out);
    return dir / "good.out";
  }

  // What an honest kernel's timing loop reports (gpu/timing_facts.h): five samples on fresh inputs,
  // 128 rows checked after each, the drawn and the last sample checked in full, two repeat probes.
  TimingFacts honest_timing_facts() const {
    const uint64_t n = uint64_t(plan.bench[0].timed.shape.elements(2, 64));
    DeviceCheckFacts clean;
    clean.n = n;
    clean.ref2 = double(n);
    TimingFacts f;
    f.samples = 5;
    f.rows_per_sample = 128;
    f.rows_checked = 4 * 128 + 2 * 128;
    f.rows = clean;
    f.full = {FullCheck{2, "drawn", "normal", 10.1, true, clean}, FullCheck{4, "last", "normal", 10.0, true, clean}};
    f.probe_fresh_us = {10.0, 10.1};
    f.probe_repeat_us = {10.0, 10.05};
    return f;
  }

  // A stand-in for `evo __worker`: the events a passing candidate's worker sends, written by
  // the worker's own constructors and encoder, with its outputs copied into place.
  void install_fake_worker() {
    const fs::path good = write_outputs(), work = env.work_root / c.id();
    const std::string gate_out = (work / "gate0.out").string(), post_out = (work / "post1.out").string();
    const SampleStats st = summarize({10.0, 10.1, 10.2, 9.9, 10.0});
    WorkerEvent timing = timing_event(plan.bench[0].id);
    timing.fields = {{"stats", stats_json(st)},    {"warmup_launches", 3},   {"sm_clock_before_mhz", 1980},
                     {"sm_clock_after_mhz", 1980}, {"back_to_back_us", 9.5}, {"graph_us", 9.0}};
    timing.fields["integrity"] = to_json(honest_timing_facts());
    const std::string before = encode_worker_event(phase_event("init")) + "\n" +
                               encode_worker_event(case_done_event(plan.gate_cases[0].id, gate_out, true, true, true)) +
                               "\n" + encode_worker_event(worker_event(WorkerEventKind::await)) + "\n";
    // The benchmark shape's fully checked sample: counts from the GPU, no file (gpu/timing_loop.h).
    FullCheck drawn{2, "drawn", "normal", 10.3, true, DeviceCheckFacts{}};
    drawn.facts.n = uint64_t(plan.bench[0].timed.shape.elements(2, 64));
    drawn.facts.ref2 = double(drawn.facts.n);
    const std::string after = encode_worker_event(timing) + "\n" +
                              encode_worker_event(post_done_event(plan.bench[0].id, drawn, true)) + "\n" +
                              encode_worker_event(worker_event(WorkerEventKind::done)) + "\n";
    test::write_text(dir / "before.txt", before);
    test::write_text(dir / "after.txt", after);
    const fs::path script = dir / "fake-evo";
    test::write_text(script, "#!/bin/sh\ncp '" + good.string() + "' '" + gate_out + "'\ncat '" +
                                 (dir / "before.txt").string() +
                                 "'\nread answer\n[ \"$answer\" = continue ] || exit 0\ncp '" + good.string() + "' '" +
                                 post_out + "'\ncat '" + (dir / "after.txt").string() + "'\n");
    ::chmod(script.c_str(), 0755);
    ::setenv("EVO_EXECUTABLE", script.c_str(), 1);
  }

  Record evaluate() {
    return evaluate_candidate(env, c, compiled, plan, EliteStanding{}, "test", [](const std::string&) {});
  }
};

TEST(RunRecord, FakeEvaluationHasTheFieldsOfACommittedRunRecordAndRoundTrips) {
  const std::string saved = std::getenv("EVO_EXECUTABLE") ? std::getenv("EVO_EXECUTABLE") : "";
  FakeEvaluation f;
  f.install_fake_worker();
  const Record rec = f.evaluate();
  ::setenv("EVO_EXECUTABLE", saved.c_str(), 1);

  EXPECT_EQ(rec.outcome, Outcome::ok) << rec.reason.value_or("");
  ASSERT_TRUE(rec.fitness);
  EXPECT_NEAR(*rec.fitness->geomean_median_us, 10.0, 1e-9);
  ASSERT_TRUE(rec.timing);
  ASSERT_EQ(rec.timing->size(), 1u);
  EXPECT_GT((*rec.timing)[0].tflops.value_or(0), 0);
  EXPECT_EQ(rec.gate_seed, 42);
  ASSERT_TRUE(rec.gates && rec.gates->sampled);  // typed, not in gates.extra
  EXPECT_EQ(rec.gates->sampled->seed, 42);
  EXPECT_EQ(rec.gates->sampled->run, rec.gates->sampled->cases);
  EXPECT_FALSE(rec.gates->sanitizer);  // no --sanitize: the record says null
  ASSERT_TRUE(rec.phases && rec.phases->detail);
  EXPECT_TRUE(rec.phases->detail->count("parent_compare_s"));

  const json written = write_record(rec);
  // The newest committed ok record of a real run (stage 7, sampled gate on). Skipped: what the
  // kernel decides (params, SASS counts) and what the session stamps after the evaluator
  // (env.gpu_uuid, env.device: run/session.cpp).
  const json real = committed_record("20261123T062851Z-nvidia-h200-stage7.jsonl", 0);
  // phases.detail (where the evaluation's time went), the benchmark shapes' checks on the GPU
  // (docs/safety.md §3e) and each check's error bias (hacker round 19) are newer than that record.
  const std::vector<std::string> skip = {"params.",
                                         "compile.technique.",
                                         "env.gpu_uuid",
                                         "env.device",
                                         "phases.detail",
                                         "gates.post_timing.checks[].device_check",
                                         "gates.post_timing.checks[].bias",
                                         "gates.correctness.checks[].bias",
                                         "timing[].integrity"};
  EXPECT_EQ(fields_of(written, skip), fields_of(real, skip));
  // The timing integrity fields (docs/records.md): typed, judged by the parent.
  const json& integrity = written["timing"][0]["integrity"];
  EXPECT_EQ(integrity["fresh_inputs"], true);
  EXPECT_EQ(integrity["samples_verified"], 5);
  EXPECT_EQ(integrity["rows_checked"], 768);
  ASSERT_EQ(integrity["full_checks"].size(), 2u);
  EXPECT_EQ(integrity["full_checks"][0]["why"], "drawn");
  EXPECT_EQ(integrity["full_checks"][0]["sample"], 3);
  EXPECT_EQ(integrity["full_checks"][1]["pass"], true);
  EXPECT_EQ(integrity["repeat_probes"]["n"], 2);
  EXPECT_EQ(integrity["repeat_probes"]["pass"], true);
  EXPECT_GT(integrity["floor_us"].get<double>(), 0);
  EXPECT_EQ(integrity["pass"], true);
  EXPECT_TRUE(integrity["failure"].is_null());
  ASSERT_TRUE(written["phases"].contains("detail"));
  EXPECT_TRUE(written["phases"]["detail"].contains("parent_compare_s")) << written["phases"]["detail"].dump();

  const RecordRead back = read_record(written);
  ASSERT_TRUE(back.record) << back.error;
  EXPECT_EQ(write_record(*back.record), written);
}

TEST(RunRecord, CandidateStoppedBeforeTheGpuHasTheFieldsOfACommittedOne) {
  FakeEvaluation f;
  f.compiled.launch.reset();
  f.compiled.resources.reset();
  f.compiled.technique.reset();
  f.compiled.verdict = Verdict{Outcome::constraints, "BLOCK_M must be a multiple of 16*NWARPS"};
  const Record rec = f.evaluate();  // no worker is started: EVO_EXECUTABLE is not touched
  EXPECT_EQ(rec.outcome, Outcome::constraints);
  const json written = write_record(rec);
  EXPECT_TRUE(written["fitness"].is_null());
  EXPECT_TRUE(written["gates"]["resources"]["pass"].is_null());
  // A constraints record of `evo evolve`, without what evolve adds ("evolve") and the compile
  // part's SASS fields (recorded since, as the stage-7 record above has them).
  const json real = committed_record("20261123T053554Z-nvidia-h200-evolve-ev-20261123T053554Z-1.jsonl", 0);
  const std::vector<std::string> skip = {"params.", "evolve", "compile.technique"};
  EXPECT_EQ(fields_of(written, skip), fields_of(real, skip));
  const RecordRead back = read_record(written);
  ASSERT_TRUE(back.record) << back.error;
  EXPECT_EQ(write_record(*back.record), written);
}

TEST(RunRecord, FitnessOnlyForAPassingUnprunedCandidateTimedOnEveryShape) {
  Record r;
  r.outcome = Outcome::ok;
  r.pruned = false;
  TimingEntry a, b;
  a.median_us = 4.0, a.p90_us = 5.0, b.median_us = 9.0, b.p90_us = 20.0;
  r.timing = std::vector<TimingEntry>{a, b};
  add_fitness(r, 3);  // one shape short
  EXPECT_FALSE(r.fitness);
  add_fitness(r, 2);
  ASSERT_TRUE(r.fitness);
  EXPECT_DOUBLE_EQ(*r.fitness->geomean_median_us, 6.0);
  EXPECT_DOUBLE_EQ(*r.fitness->geomean_p90_us, 10.0);
  EXPECT_EQ(r.fitness->shapes, 2);
  r.fitness.reset();
  r.pruned = true;
  add_fitness(r, 2);
  EXPECT_FALSE(r.fitness);
  r.pruned = false;
  r.outcome = Outcome::correctness;
  add_fitness(r, 2);
  EXPECT_FALSE(r.fitness);
}

TEST(RunRecord, TimingEntryCarriesTheWorkersStatisticsAndNullsForWhatItDidNotMeasure) {
  const Shape s = parse_shape("1x8x8x512x512x64", 64);
  const TimingEntry t =
      run_timing_entry({{"stats", stats_json(summarize({20.0, 21.0, 22.0}))}}, s, parse_task("fp16-d64"));
  EXPECT_EQ(t.shape, "1x8x8x512x512x64");
  EXPECT_EQ(t.median_us, 21.0);
  EXPECT_NEAR(*t.tflops, s.flops(false) / 21.0 / 1e6, 1e-9);
  EXPECT_TRUE(t.extra["graph_us"].is_null());
  EXPECT_TRUE(t.extra["sm_clock_before_mhz"].is_null());
  EXPECT_TRUE(t.extra.contains("gbps"));
}

}  // namespace
}  // namespace evo
