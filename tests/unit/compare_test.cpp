// `evo compare`: the golden COMPARE.md from fixture records, determinism of every format, the
// repo's own results/COMPARE.md, and the model behind them (report/compare.h).
#include "report/compare.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::read_text;
using test::run_evo;
using test::scratch_dir;
using test::source_root;
using test::write_text;

fs::path fixture_dir() { return source_root() / "tests" / "fixtures" / "compare"; }

// ---------------------------------------------------------------------------------------------
// End to end

TEST(CompareCli, FixtureRecordsGiveTheGoldenFile) {
  const fs::path out = scratch_dir("compare-golden") / "COMPARE.md";
  const auto r =
      run_evo("compare --results " + test::shell_quote(fixture_dir() / "results") + " --out " + test::shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(read_text(out), read_text(fixture_dir() / "COMPARE.md"))
      << "COMPARE.md changed; if on purpose, regenerate the golden file with\n  evo compare --results "
         "tests/fixtures/compare/results --out tests/fixtures/compare/COMPARE.md\nand review its diff";
}

TEST(CompareCli, EveryFormatIsByteIdenticalAcrossRuns) {
  const fs::path dir = scratch_dir("compare-determinism");
  for (const std::string format : {"md", "json", "csv"}) {
    for (int i = 0; i < 2; ++i) {
      const auto r = run_evo("compare --results " + test::shell_quote(fixture_dir() / "results") + " --format " +
                             format + " --out " + test::shell_quote(dir / (format + std::to_string(i))));
      ASSERT_EQ(r.exit_code, 0) << r.out;
    }
    EXPECT_EQ(read_text(dir / (format + "0")), read_text(dir / (format + "1"))) << format;
  }
  const json j = json::parse(read_text(dir / "json0"));
  EXPECT_EQ(j["kind"], "compare");
  EXPECT_EQ(j["sections"].size(), 4u);
  const std::string csv = read_text(dir / "csv0");
  EXPECT_EQ(csv.rfind("gpu,task,kind,stage,variant,params,shape,median_us", 0), 0u) << csv;
}

TEST(CompareCli, StdoutEqualsTheFile) {
  const auto r = run_evo("compare --results " + test::shell_quote(fixture_dir() / "results") + " --out -");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, read_text(fixture_dir() / "COMPARE.md"));
}

TEST(CompareCli, FiltersSelectOneSectionAndUnknownOnesExit1) {
  auto r = run_evo("compare --results " + test::shell_quote(fixture_dir() / "results") +
                   " --gpu nvidia-h200 --task fp16-d64-causal --out -");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("## fp16-d64-causal on nvidia-h200"), std::string::npos);
  EXPECT_EQ(r.out.find("## fp16-d64 on"), std::string::npos);
  r = run_evo("compare --results " + test::shell_quote(fixture_dir() / "results") + " --gpu nvidia-b200 --out -");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("GPUs in the records: nvidia-a100-sxm4-80gb, nvidia-h200"), std::string::npos) << r.out;
  r = run_evo("compare --results " + test::shell_quote(fixture_dir() / "results") + " --task fp32 --out -");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  r = run_evo("compare --results " + test::shell_quote(fixture_dir() / "results") + " --format html --out -");
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

TEST(CompareCli, UnreadableRecordExits1NamingFileAndLine) {
  const fs::path dir = scratch_dir("compare-bad");
  write_text(dir / "a.jsonl", read_text(fixture_dir() / "results" / "run-a.jsonl") + "{\"kind\": \"run\"}\n");
  auto r = run_evo("compare --results " + test::shell_quote(dir) + " --out -");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("a.jsonl:10"), std::string::npos) << r.out;

  fs::remove(dir / "a.jsonl");
  fs::copy_file(fixture_dir() / "results" / "run-a.jsonl", dir / "a.jsonl");
  write_text(dir / "peers" / "nvidia-h200.json", "{\"not\": \"a list\"}");
  r = run_evo("compare --results " + test::shell_quote(dir) + " --out -");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("nvidia-h200.json: not a JSON list"), std::string::npos) << r.out;
}

// The lead commits results/COMPARE.md generated from the real H200 records; it must be what
// `evo compare` makes of results/ today, byte for byte.
TEST(CompareCli, RepoCompareMdIsUpToDate) {
  const fs::path committed = source_root() / "results" / "COMPARE.md";
  if (!fs::exists(committed)) GTEST_SKIP() << committed.string() << " is not committed yet";
  const fs::path out = scratch_dir("compare-repo") / "COMPARE.md";
  const auto r =
      run_evo("compare --results " + test::shell_quote(test::committed_results()) + " --out " + test::shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(read_text(out), read_text(committed)) << "results/COMPARE.md is stale: run `evo compare` and commit it";
}

// ---------------------------------------------------------------------------------------------
// The model

json timing(const std::string& shape, double median, double rel_stdev = 0.003, int n = 60) {
  return {{"shape", shape},
          {"median_us", median},
          {"p10_us", median * 0.99},
          {"p90_us", median * 1.01},
          {"stdev_us", median * rel_stdev},
          {"n", n},
          {"rse", rel_stdev / std::sqrt(double(n))},
          {"sm_clock_before_mhz", 1980},
          {"sm_clock_after_mhz", 1980}};
}

json run(int stage, const std::string& id, std::vector<json> timings, const std::string& outcome = "ok",
         const std::string& reason = "") {
  double log_sum = 0;
  for (const auto& t : timings) log_sum += std::log(t["median_us"].get<double>());
  json r = {{"schema_version", "1.0"},
            {"kind", "run"},
            {"run_id", "r1"},
            {"time", "2026-11-21T00:00:00Z"},
            {"candidate_id", id},
            {"variant", std::to_string(stage) + "-s/v"},
            {"stage", stage},
            {"params", json::object()},
            {"task", "fp16-d64"},
            {"source_sha256", "ab" + id},  // one candidate per id
            {"env", {{"gpu_key", "nvidia-h200"}}},
            {"outcome", outcome},
            {"reason", reason},
            {"timing", outcome == "ok" ? json(timings) : json::array()},
            {"fitness", nullptr}};
  if (outcome == "ok" && !timings.empty())
    r["fitness"] = {{"geomean_median_us", std::exp(log_sum / double(timings.size()))}, {"complete", true}};
  return r;
}

json peer(const std::string& backend, const std::string& shape, double median, const std::string& outcome = "ok") {
  return {{"schema_version", "1.0"},
          {"kind", "peer"},
          {"run_id", "p"},
          {"time", "2026-11-21T00:00:00Z"},
          {"candidate_id", "p-" + backend + shape},
          {"variant", "peer/pytorch-sdpa-" + backend},
          {"stage", -1},
          {"params", json::object()},
          {"task", "fp16-d64"},
          {"shape", shape},
          {"source_sha256", "cd"},
          {"env", {{"gpu_key", "nvidia-h200"}, {"torch", "2.11.0"}}},
          {"outcome", outcome},
          {"reason", outcome == "ok" ? "" : "no kernel"},
          {"timing", outcome == "ok" ? json::array({timing(shape, median, 0.004, 200)}) : json::array()}};
}

const std::string kS1 = "1x8x8x512x512x64", kS2 = "8x32x32x2048x2048x64";

TEST(CompareModel, BestOfEachStageWithRatios) {
  CompareInput in;
  in.records = {run(0, "a", {timing(kS1, 100), timing(kS2, 4000)}), run(0, "b", {timing(kS1, 120), timing(kS2, 4400)}),
                run(1, "c", {timing(kS1, 50), timing(kS2, 2000)})};
  in.peers = {peer("flash", kS1, 40), peer("flash", kS2, 2000), peer("cudnn", kS1, 25),
              peer("cudnn", kS2, 0, "unsupported")};
  const Comparison c = build_comparison(in, {});
  ASSERT_EQ(c.sections.size(), 1u);
  const CompareSection& s = c.sections[0];
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.stages[0].candidate_id, "a") << "rank 1 by geomean median";
  EXPECT_EQ(s.shapes, (std::vector<std::string>{kS1, kS2}));
  ASSERT_TRUE(s.stages[1].speedup_vs_base);
  EXPECT_NEAR(s.stages[1].speedup_vs_base->ratio, 2.0, 1e-9);
  EXPECT_NEAR(s.stages[1].time_vs_prev->ratio, 0.5, 1e-9);
  EXPECT_NEAR(s.stages[1].speedup_vs_peer.at("pytorch-sdpa-flash").ratio, std::sqrt(0.8 * 1.0), 1e-9);
  EXPECT_EQ(s.stages[1].speedup_vs_peer.at("pytorch-sdpa-cudnn").terms, 1) << "cuDNN measured one shape";
  ASSERT_EQ(s.peers.size(), 2u);
  EXPECT_EQ(s.peers[0].label, "PyTorch flash");
  EXPECT_EQ(s.peers[1].unsupported.at(kS2), "unsupported: no kernel");
  EXPECT_EQ(s.summary.rfind("stage 1 ran 2.00 ± ", 0), 0u) << s.summary;
  EXPECT_NE(s.summary.find("0.89 ± 0.00× PyTorch flash"), std::string::npos) << s.summary;
  EXPECT_NE(s.summary.find("(1 of 2 shapes)"), std::string::npos) << s.summary;
  // TFLOPS from the shape: 4 * 1*8*512*512*64 FLOPs in 100 µs.
  EXPECT_NEAR(*s.stages[0].shapes[0].figures.tflops, 4.0 * 8 * 512 * 512 * 64 / 100e6, 1e-9);
  EXPECT_NEAR(*s.stages[0].shapes[0].figures.ceiling_share, *s.stages[0].shapes[0].figures.tflops / 791, 1e-12);
}

// FlashAttention-4's records (scripts/peers_fa4.py) are a peer like the SDPA backends: a column
// beside cuDNN, their labels, and the versions of the wheel and the CuTe DSL they ran.
TEST(CompareModel, FlashAttention4IsAPeerBesideCudnn) {
  json fa4 = peer("fa4", kS1, 20);
  fa4["variant"] = "peer/flash-attn-4";
  fa4["env"]["flash_attn_4"] = "4.0.0b36";
  CompareInput in;
  in.records = {run(0, "a", {timing(kS1, 100)})};
  in.peers = {peer("efficient", kS1, 90), fa4, peer("cudnn", kS1, 25), peer("flash", kS1, 40)};
  const Comparison c = build_comparison(in, {});
  const CompareSection& s = c.sections.at(0);
  std::vector<std::string> labels;
  for (const auto& p : s.peers) labels.push_back(p.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"PyTorch flash", "cuDNN", "FlashAttention-4", "PyTorch efficient"}));
  EXPECT_EQ(s.peers[2].versions, "flash_attn_4 4.0.0b36, torch 2.11.0");
  EXPECT_NEAR(s.stages.at(0).speedup_vs_peer.at("flash-attn-4").ratio, 0.2, 1e-9);
}

// A speed ratio comes from one run: each stage is held against the peer records nearest in time
// to its own record (the peers of its device call), not the latest ones, while the peer table
// still shows the latest.
TEST(CompareModel, EachStageIsHeldAgainstThePeersNearestInTime) {
  json early = run(0, "a", {timing(kS1, 100)});
  early["time"] = "2026-11-21T10:00:00Z";
  json late = run(1, "b", {timing(kS1, 50)});
  late["time"] = "2026-11-22T10:00:00Z";
  json peer_early = peer("flash", kS1, 80), peer_late = peer("flash", kS1, 40);
  peer_early["time"] = "2026-11-21T10:05:00Z";
  peer_late["time"] = "2026-11-22T10:04:00Z";
  CompareInput in;
  in.records = {early, late};
  in.peers = {peer_early, peer_late};
  const Comparison c = build_comparison(in, {});
  ASSERT_EQ(c.sections.size(), 1u);
  const CompareSection& s = c.sections[0];
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_NEAR(s.stages[0].speedup_vs_peer.at("pytorch-sdpa-flash").ratio, 0.8, 1e-9) << "its own call's peer: 80 / 100";
  EXPECT_NEAR(s.stages[1].speedup_vs_peer.at("pytorch-sdpa-flash").ratio, 0.8, 1e-9) << "its own call's peer: 40 / 50";
  EXPECT_NEAR(s.stages[0].shapes[0].speedup_vs_peer.at("pytorch-sdpa-flash").ratio, 0.8, 1e-9);
  ASSERT_EQ(s.peers.size(), 1u);
  EXPECT_NEAR(s.peers[0].shapes[0].sample.median_us, 40, 1e-9) << "the peer table shows the latest";
}

// A sanitizer verdict belongs to the compiled candidate: when its latest record is a re-measure
// without --sanitize (evo gate), the stage row still says the sanitizer passed it, and in which
// run; a candidate never sanitized says so.
TEST(CompareModel, SanitizerVerdictCarriesOverToLaterRecordsOfTheSameCandidate) {
  json sanitized = run(0, "a", {timing(kS1, 100)});
  sanitized["run_id"] = "r-sanitized";
  sanitized["gates"] = {{"sanitizer", {{"pass", true}}}};
  json remeasured = run(0, "a", {timing(kS1, 101)});
  remeasured["run_id"] = "r-gate";
  remeasured["time"] = "2026-11-21T01:00:00Z";
  remeasured["gates"] = {{"sanitizer", nullptr}};
  CompareInput in;
  in.records = {sanitized, remeasured};
  auto s = build_comparison(in, {}).sections[0];
  ASSERT_EQ(s.stages.size(), 1u);
  EXPECT_NE(s.stages[0].gates.find("sanitizer ok (run r-sanitized)"), std::string::npos) << s.stages[0].gates;

  in.records = {remeasured};
  s = build_comparison(in, {}).sections[0];
  EXPECT_NE(s.stages[0].gates.find("not sanitized"), std::string::npos) << s.stages[0].gates;

  // A report keeps the candidate out of the elite however it is re-measured later
  // (store/population.cpp), so its stage has no row at all.
  json failed = sanitized;
  failed["gates"]["sanitizer"]["pass"] = false;
  failed["outcome"] = "sanitizer";
  failed["fitness"] = nullptr;
  in.records = {failed, remeasured};
  s = build_comparison(in, {}).sections[0];
  EXPECT_TRUE(s.stages.empty()) << s.stages.size();
}

TEST(CompareModel, WarningsForClockDropsNoiseAndSuspiciousJumps) {
  json t0 = timing(kS1, 1000);
  json t1 = timing(kS1, 80, 0.25, 30);  // 12.5x faster, rse 4.6 %
  t1["sm_clock_after_mhz"] = 1755;
  CompareInput in;
  in.records = {run(0, "a", {t0}), run(2, "b", {t1})};
  const auto s = build_comparison(in, {}).sections[0];
  ASSERT_EQ(s.warnings.size(), 3u);
  EXPECT_NE(s.warnings[0].find("SM clock fell from 1980 to 1755 MHz"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[1].find("noisy timing, rse 4.6 %"), std::string::npos) << s.warnings[1];
  EXPECT_NE(s.warnings[2].find("over 10× faster than stage 0"), std::string::npos) << s.warnings[2];
}

// The thresholds come from gates/gates.json ("compare", "verdict"): the repository's file gives
// the values the report was written with, and a changed value changes the report.
TEST(CompareModel, ThresholdsComeFromGatesJson) {
  const GatesConfig repo = load_gates_config(source_root() / "gates" / "gates.json");
  const CompareThresholds th = CompareThresholds::from(repo);
  EXPECT_EQ(th.compare.confidence, 0.95);
  EXPECT_EQ(th.compare.suspicious_speedup, 10.0);
  EXPECT_EQ(th.verdict.noisy_rse, 0.02);
  EXPECT_EQ(th.verdict.clock_drop_ratio, 0.9);

  json t0 = timing(kS1, 1000);
  json t1 = timing(kS1, 80, 0.25, 30);  // 12.5x faster, rse 4.6 %
  t1["sm_clock_after_mhz"] = 1755;      // from 1980: 0.886 of the start
  CompareInput in;
  in.records = {run(0, "a", {t0}), run(2, "b", {t1})};
  const std::string md = render_markdown(build_comparison(in, {}, th));
  EXPECT_EQ(md, render_markdown(build_comparison(in, {}))) << "the defaults are gates.json's values";

  std::string text = read_text(source_root() / "gates" / "gates.json");
  const auto at = text.find("\"suspicious_speedup\": 10");
  ASSERT_NE(at, std::string::npos) << "gates.json has the compare section";
  text.replace(at, std::string("\"suspicious_speedup\": 10").size(), "\"suspicious_speedup\": 20");
  const auto noisy = text.find("\"noisy_rse\": 0.02");
  ASSERT_NE(noisy, std::string::npos);
  text.replace(noisy, std::string("\"noisy_rse\": 0.02").size(), "\"noisy_rse\": 0.05");
  text.replace(text.find("\"confidence\": 0.95"), std::string("\"confidence\": 0.95").size(), "\"confidence\": 0.9");
  const GatesConfig changed = parse_gates_config(text, "changed gates.json");
  EXPECT_EQ(changed.compare.suspicious_speedup, 20.0);
  EXPECT_EQ(changed.compare.confidence, 0.9);
  const Comparison c = build_comparison(in, {}, CompareThresholds::from(changed));
  ASSERT_EQ(c.sections[0].warnings.size(), 1u) << "12.5x is under 20x, and rse 4.6 % under 5 %";
  EXPECT_NE(c.sections[0].warnings[0].find("SM clock fell"), std::string::npos) << c.sections[0].warnings[0];
  const std::string md_changed = render_markdown(c);
  EXPECT_NE(md_changed, md);
  EXPECT_NE(md_changed.find("half-width of the 90 % interval"), std::string::npos);
  EXPECT_NE(md.find("half-width of the 95 % interval"), std::string::npos);

  text.replace(text.find("\"confidence\": 0.9,"), std::string("\"confidence\": 0.9,").size(), "\"confidence\": 1.5,");
  try {
    parse_gates_config(text, "bad gates.json");
    ADD_FAILURE() << "a confidence of 1.5 was accepted";
  } catch (const EvoError& e) {
    EXPECT_NE(std::string(e.what()).find("compare: confidence must be between 0 and 1"), std::string::npos) << e.what();
  }
}

TEST(CompareModel, FailuresAreCountedByStageOutcomeAndReason) {
  CompareInput in;
  in.records = {run(0, "a", {timing(kS1, 100)}), run(1, "b", {}, "crash", "illegal address"),
                run(1, "c", {}, "crash", "illegal address"), run(1, "d", {}, "correctness", "max_abs 0.5"),
                run(0, "e", {}, "compile", "error")};
  const auto s = build_comparison(in, {}).sections[0];
  ASSERT_EQ(s.failures.size(), 3u);
  EXPECT_EQ(s.failures[0].stage, 0);
  EXPECT_EQ(s.failures[1].outcome, Outcome::crash);
  EXPECT_EQ(s.failures[1].count, 2);
  EXPECT_EQ(s.failures[2].outcome, Outcome::correctness);
  EXPECT_EQ(s.stages.size(), 1u);
  EXPECT_EQ(s.summary, "only stage 0 has an elite so far");
}

TEST(CompareModel, SectionWithoutEliteSaysSo) {
  CompareInput in;
  in.records = {run(0, "a", {}, "compile", "error")};
  const auto c = build_comparison(in, {});
  EXPECT_NE(c.sections[0].summary.find("no stage has an elite yet"), std::string::npos);
  EXPECT_NE(render_markdown(c).find("### Failures"), std::string::npos);
}

TEST(CompareModel, FilterThatMatchesNothingIsAUsageError) {
  CompareInput in;
  in.records = {run(0, "a", {timing(kS1, 100)})};
  try {
    build_comparison(in, {"nvidia-h100", ""});
    FAIL() << "accepted";
  } catch (const EvoError& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    EXPECT_NE(std::string(e.what()).find("GPUs in the records: nvidia-h200"), std::string::npos) << e.what();
  }
  EXPECT_THROW(build_comparison(in, {"", "fp32-d64"}), EvoError);
}

TEST(CompareModel, CeilingsAreKeyedByGpuAndDtype) {
  EXPECT_EQ(ceiling_tflops("nvidia-h200", "fp16"), 791);
  EXPECT_EQ(ceiling_tflops("nvidia-h200", "bf16"), 785);
  EXPECT_FALSE(ceiling_tflops("nvidia-h200", "fp8"));
  EXPECT_FALSE(ceiling_tflops("nvidia-a100-sxm4-80gb", "fp16"));
}

TEST(CompareModel, PeerListProblemsNameTheEntry) {
  std::vector<json> out;
  std::vector<std::string> problems;
  json good = peer("flash", kS1, 40);
  json bad = good;
  bad.erase("task");
  json not_peer = good;
  not_peer["kind"] = "run";
  parse_peer_list(json::array({good, bad, not_peer}).dump(), "results/peers/nvidia-h200.json", out, problems);
  EXPECT_EQ(out.size(), 1u);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("nvidia-h200.json: [1]: field 'task'"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("[2]: kind is 'run'"), std::string::npos) << problems[1];
}

TEST(CompareModel, PeerWithoutGpuKeyTakesTheFileName) {
  std::vector<json> out;
  std::vector<std::string> problems;
  json p = peer("flash", kS1, 40);
  p["env"].erase("gpu_key");
  parse_peer_list(json::array({p}).dump(), "x/peers/nvidia-h200.json", out, problems);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]["env"]["gpu_key"], "nvidia-h200");
}

TEST(CompareRender, MarkdownHasTheChartAndEscapesCells) {
  CompareInput in;
  in.records = {run(0, "a", {timing(kS1, 100), timing(kS2, 4000)}), run(1, "b", {}, "crash", "a | b\nc")};
  in.peers = {peer("flash", kS1, 40)};
  const std::string md = render_markdown(build_comparison(in, {}));
  EXPECT_NE(md.find("```mermaid\nxychart-beta\n"), std::string::npos) << md;
  EXPECT_NE(md.find("x-axis [\"stage 0\"]"), std::string::npos) << md;
  EXPECT_NE(md.find("Not in the chart (not every shape measured): PyTorch flash (1 of 2 shapes)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | crash | 1 | a \\| b c |"), std::string::npos) << md;
}

}  // namespace
}  // namespace evo
