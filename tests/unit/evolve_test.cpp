// The evolve layer without a GPU or NVRTC: the builtin generator's determinism, the external
// generator's failure modes (hang, crash, garbage, oversize), admission, the novelty key, the
// tie rule in populations, and `evo context`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/paths.h"
#include "core/subprocess.h"
#include "evolve/admission.h"
#include "evolve/generator.h"
#include "evolve/novelty.h"
#include "search/strategy.h"
#include "store/population.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

using nlohmann::json;

Variant tunable_variant() {
  Variant v;
  v.id = "9-test/t";
  v.stage = 9;
  v.source = "/*evo {} */ kernel";
  v.params = {{"A", {1, 2, 4, 8}}, {"B", {16, 32, 64}}, {"C", {0, 1}}};
  v.dtypes = {"fp16"};
  v.head_dims = {64};
  return v;
}

std::vector<Proposal> draw(const Variant& v, const std::string& strategy, uint64_t seed,
                           const std::vector<Observation>& prior, int gen = 0) {
  TunableGenerator g({SearchVariant{&v, v.params}}, strategy, seed);
  SearchState s;
  s.prior = prior;
  s.generation = gen;
  return g.propose(s, 6);
}

std::string text(const std::vector<Proposal>& ps) {
  std::string s;
  for (const auto& p : ps) s += Candidate{p.variant, p.params, Task{}, "sm_90a"}.params_text() + " <" + p.parent + ">;";
  return s;
}

TEST(TunableGenerator, SameSeedSameProposalsOtherSeedOthers) {
  const Variant v = tunable_variant();
  const std::vector<Observation> parents{{&v, {{"A", 2}, {"B", 32}, {"C", 0}}, Fidelity::full, "ok", 10.0, 5, "aaaa"},
                                         {&v, {{"A", 4}, {"B", 64}, {"C", 1}}, Fidelity::full, "ok", 11.0, 5, "bbbb"}};
  EXPECT_EQ(text(draw(v, "genetic", 7, parents)), text(draw(v, "genetic", 7, parents)));
  EXPECT_NE(text(draw(v, "genetic", 7, parents)), text(draw(v, "genetic", 8, parents)));
  EXPECT_NE(text(draw(v, "genetic", 7, parents, 0)), text(draw(v, "genetic", 7, parents, 1)));
  for (const auto& p : draw(v, "genetic", 7, parents)) {
    EXPECT_FALSE(p.parent.empty()) << "genetic children name their parents";
    EXPECT_EQ(p.params.size(), 3u);
  }
  for (const auto& p : draw(v, "random", 7, parents)) EXPECT_TRUE(p.parent.empty()) << "random draws have no parent";
  EXPECT_EQ(text(draw(v, "builtin", 7, parents)), text(draw(v, "builtin", 7, parents)));
  for (const auto& p : draw(v, "builtin", 7, parents)) EXPECT_EQ(p.fidelity, Fidelity::screen);
}

TEST(TunableGenerator, NeverProposesWhatIsKnownAndStopsWhenTheDomainIsSpent) {
  const Variant v = tunable_variant();
  TunableGenerator g({SearchVariant{&v, v.params}}, "random", 1);
  std::set<std::string> known;
  size_t total = 0;
  for (int gen = 0; gen < 40; ++gen) {
    SearchState s;
    s.generation = gen;
    s.known = [&](const Variant&, const ParamSet& p) {
      return known.count(Candidate{&v, p, Task{}, "sm_90a"}.params_text()) > 0;
    };
    auto ps = g.propose(s, 5);
    for (const auto& p : ps) EXPECT_TRUE(known.insert(Candidate{&v, p.params, Task{}, "sm_90a"}.params_text()).second);
    total += ps.size();
  }
  EXPECT_EQ(total, g.domain_size()) << "every config once, then nothing";
  EXPECT_EQ(g.domain_size(), 24u);
  EXPECT_EQ(g.feasible_size(), 24u) << "no rules: everything is feasible until compiled";
  std::string why;
  EXPECT_EQ(exit_code_of([&] { TunableGenerator({}, "annealing", 1); }, &why), 1);
  EXPECT_NE(why.find("use builtin, screened, spacefill, random, genetic, exhaustive"), std::string::npos) << why;
}

// spacefill (the builtin without its model): every screen the configuration farthest, in rank
// space, from the elites before the run and each screen picked before it (greedy maximin).
TEST(TunableGenerator, SpacefillScreensWhatIsFarthestFromEverythingBefore) {
  const Variant v = tunable_variant();
  const auto point = [&](const ParamSet& p) {
    std::vector<double> x;
    for (size_t k = 0; k < v.params.size(); ++k) {
      std::vector<long> dom = v.params[k].values;
      std::sort(dom.begin(), dom.end());
      x.push_back(double(std::find(dom.begin(), dom.end(), p[k].second) - dom.begin()) / double(dom.size() - 1));
    }
    return x;
  };
  const auto nearest = [&](const std::vector<double>& x, const std::vector<std::vector<double>>& taken) {
    double near = 1e18;
    for (const auto& t : taken) {
      double d2 = 0;
      for (size_t i = 0; i < x.size(); ++i) d2 += (x[i] - t[i]) * (x[i] - t[i]);
      near = std::min(near, std::sqrt(d2));
    }
    return near;
  };
  std::vector<std::vector<double>> every;
  for (long a : {1, 2, 4, 8})
    for (long b : {16, 32, 64})
      for (long c : {0, 1}) every.push_back(point({{"A", a}, {"B", b}, {"C", c}}));
  const std::vector<Observation> elite{{&v, {{"A", 1}, {"B", 16}, {"C", 0}}, Fidelity::full, "ok", 10.0, 5, "aaaa"}};
  for (uint64_t seed : {1, 2, 3}) {
    const std::vector<Proposal> ps = draw(v, "spacefill", seed, elite);
    ASSERT_EQ(ps.size(), 6u);
    std::vector<std::vector<double>> taken{point(elite[0].params)};
    for (const auto& p : ps) {
      EXPECT_EQ(p.fidelity, Fidelity::screen);
      double farthest = 0;
      for (const auto& x : every) farthest = std::max(farthest, nearest(x, taken));
      EXPECT_DOUBLE_EQ(nearest(point(p.params), taken), farthest) << "seed " << seed << ": " << text(ps);
      taken.push_back(point(p.params));
    }
    EXPECT_EQ(ps[0].params, (ParamSet{{"A", 8}, {"B", 64}, {"C", 1}})) << "the corner opposite the elite";
  }
}

TEST(ExternalGenerator, HangIsKilledWithAClearMessage) {
  ExternalLimits lim;
  lim.timeout = std::chrono::milliseconds(800);
  const auto r = ask_external("sleep 30", json{{"kind", "evo-request"}}, lim);
  EXPECT_TRUE(r.proposals.empty());
  EXPECT_NE(r.error.find("did not answer within 1 s"), std::string::npos) << r.error;
  EXPECT_LT(r.seconds, 10.0);
}

TEST(ExternalGenerator, CrashAndExitCodeAreReportedWithItsStderr) {
  const auto crash = ask_external("sh -c 'kill -SEGV $$'", json::object(), {});
  EXPECT_NE(crash.error.find("SIGSEGV"), std::string::npos) << crash.error;
  const auto fail = ask_external("echo 'no API key set' >&2; exit 3", json::object(), {});
  EXPECT_NE(fail.error.find("exit 3"), std::string::npos) << fail.error;
  EXPECT_NE(fail.error.find("no API key set"), std::string::npos) << fail.error;
}

TEST(ExternalGenerator, GarbageAndOversizeAreRefused) {
  const auto garbage = ask_external("echo 'Sure! Here is your kernel'", json::object(), {});
  EXPECT_NE(garbage.error.find("not JSON"), std::string::npos) << garbage.error;
  const auto shape = ask_external("echo '{\"kernels\": []}'", json::object(), {});
  EXPECT_NE(shape.error.find("no \"candidates\" list"), std::string::npos) << shape.error;
  ExternalLimits lim;
  lim.max_output_bytes = 1000;
  const auto big = ask_external("head -c 100000 /dev/zero | tr '\\0' 'a'", json::object(), lim);
  EXPECT_NE(big.error.find("more than 1000 bytes"), std::string::npos) << big.error;
  ExternalLimits small;
  small.max_source_bytes = 100;
  const auto mixed = parse_generator_output(
      R"({"candidates": [{"source": "k1", "parent": "p", "rationale": "r"}, {"parent": "x"}, 7]})", small);
  ASSERT_EQ(mixed.proposals.size(), 1u);
  EXPECT_EQ(mixed.proposals[0].parent, "p");
  EXPECT_EQ(mixed.rejected.size(), 2u);
}

// The generator runner's stderr is what explains a runner failure, so it must reach the file asked for.
TEST(RunWithTimeout, KeepsTheChildsStderrWhereAsked) {
  const auto dir = scratch_dir("runstderr");
  const auto err = (dir / "child.err").string();
  const auto r = run_with_timeout({"/bin/sh", "-c", "echo out; echo 'evo: internal error: why' >&2; exit 5"},
                                  std::chrono::seconds(10), {}, 1 << 20, err);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.code, 5);
  EXPECT_EQ(read_file(err), "evo: internal error: why\n");
}

TEST(ExternalGenerator, ReadsTheRequestOnStdin) {
  const auto r = ask_external(
      "grep -q '\"kind\": \"evo-request\"' && echo '{\"candidates\": [{\"source\": \"K\", \"parent\": \"abc\", "
      "\"rationale\": \"why\"}]}'",
      json{{"kind", "evo-request"}}, {});
  ASSERT_EQ(r.proposals.size(), 1u) << r.error << r.raw;
  EXPECT_EQ(r.proposals[0].source, "K");
  EXPECT_EQ(r.proposals[0].rationale, "why");
}

Fitness fit(double med, double p90) {
  Fitness f;
  f.geomean_median_us = med;
  f.geomean_p90_us = p90;
  return f;
}
Elite elite(const std::string& id, double med, double p90) {
  Elite e;
  e.candidate_id = id;
  e.fitness = fit(med, p90);
  return e;
}

TEST(Admission, DisplacesOnlyBeyondTheSpread) {
  const std::vector<Elite> elites{elite("e1", 90, 91), elite("e2", 95, 96), elite("e3", 100, 102)};  // 2 % spread
  EXPECT_EQ(admit(fit(97, 97.5), elites, 3).decision, "displace");
  EXPECT_EQ(admit(fit(99, 99.5), elites, 3).decision, "tie");
  EXPECT_EQ(admit(fit(99, 99.5), elites, 3).against, "e3");
  EXPECT_EQ(admit(fit(101, 102), elites, 3).decision, "below");
  EXPECT_EQ(admit(fit(97, 104), elites, 3).decision, "tie") << "the candidate's own 7 % spread covers a 3 % lead";
  EXPECT_EQ(admit(fit(500, 600), {elites[0]}, 3).decision, "enter");
  EXPECT_EQ(admit(Fitness{}, elites, 3).decision, "none");
}

TEST(Admission, ATieRecordTakesNoPlaceInThePopulation) {
  auto rec = [](const std::string& id, double f, const char* admission) {
    json r = {{"schema_version", "1.0"},
              {"kind", "run"},
              {"candidate_id", id},
              {"variant", "5-s/" + id},
              {"params", json::object()},
              {"task", "fp16-d64"},
              {"source_sha256", id},
              {"stage", 5},
              {"outcome", "ok"},
              {"time", "2026-01-01T00:00:00Z"},
              {"env", {{"gpu_key", "gpu"}}},
              {"fitness", {{"geomean_median_us", f}, {"complete", true}}}};
    if (admission) r["evolve"] = {{"admission", admission}};
    return r;
  };
  const auto pops = derive_populations({rec("a", 10, nullptr), rec("b", 9.99, "tie"), rec("c", 8, "displace")});
  const auto elites = stage_elites(pops.at("gpu/fp16-d64"), 5);
  ASSERT_EQ(elites.size(), 2u);
  EXPECT_EQ(elites[0].candidate_id, "c");
  EXPECT_EQ(elites[1].candidate_id, "a");
}

TEST(Novelty, CommentsAndWhitespaceDoNotMakeAKernelNew) {
  EXPECT_EQ(normalized_source("/*evo {\"a\":1} */\nint  x; // one\n\tint y;"),
            normalized_source("int x;\n/* two */ int y;"));
  EXPECT_NE(normalized_source("int x; int y;"), normalized_source("int x; int z;"));
}

Record run_record(const std::string& task, const std::string& id, const json& compile_extra) {
  Record r;
  r.kind = "run";
  r.task = task;
  r.candidate_id = id;
  if (!compile_extra.is_null()) {
    r.compile = RecordCompile{};
    r.compile->extra = compile_extra;
  }
  return r;
}

TEST(Novelty, RecordsKeepTheCodeTheyRanSoAResumedRunKnowsIt) {
  NoveltyFilter f(source_root(), "fp16-d64");
  f.add_records({run_record("fp16-d64", "c1", {{"code_sha256", "a1"}}),
                 run_record("bf16-d64", "c2", {{"code_sha256", "b2"}}), run_record("fp16-d64", "c3", nullptr)});
  EXPECT_EQ(f.same_code("a1"), "c1");
  EXPECT_FALSE(f.same_code("b2")) << "another task's code";
  EXPECT_FALSE(f.same_code("")) << "no hash (an old record) matches nothing";
  f.add_code("d4", "c4");
  EXPECT_EQ(f.same_code("d4"), "c4");
}

TEST(ContextCli, MarkdownRequestForAStage) {
  const auto r =
      run_evo("context --stage 5 --task fp16-d64 --md --results-dir '" + (source_root() / "results").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* part : {"# evo request: fp16-d64 stage 5", "## I1 — the task", "evo_attn_fwd", "## I2 — the elites",
                           "## I3 — insights", "## Recent failures", "search space of 5-swizzle/swizzle", "lineage:"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out.substr(0, 3000);
  const auto free = run_evo("context --stage 5 --task fp16-d64 --operator free --results-dir '" +
                            (source_root() / "results").string() + "'");
  ASSERT_EQ(free.exit_code, 0) << free.out;
  const json j = json::parse(free.out);
  EXPECT_TRUE(j.contains("i1"));
  // The kernel parameters a kernel reads (evo_launch.h, which evo_attn.cuh includes) are shown.
  const std::string abi = j["i1"].value("abi_header", "");
  EXPECT_NE(abi.find("#include \"evo_launch.h\""), std::string::npos);
  EXPECT_NE(abi.find("struct EvoAttnParams {"), std::string::npos);
  // No stage-5 variant includes the shared primitives: they are not shown.
  EXPECT_EQ(abi.find("evo_split_kv.cuh"), std::string::npos);
  EXPECT_FALSE(j.contains("i2")) << "EvoEngineer-Free sees no elites";
  EXPECT_FALSE(j.contains("i3"));
  EXPECT_EQ(run_evo("context --stage 5 --operator best").exit_code, 1);
}

// A stage with its own benchmark sets (stage.json bench_sets: the decode stage's `decode`) is
// shown, and searched, on them: decode kernels timed on prefill shapes measure nothing a model runs.
TEST(ContextCli, AStageWithItsOwnBenchSetsIsShownItsShapes) {
  const auto r = run_evo("context --stage 9 --task fp16-d128 --operator free --results-dir '" +
                         (source_root() / "results").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json bench = json::parse(r.out)["i1"]["shapes"]["benchmark"];
  ASSERT_FALSE(bench.empty());
  for (const auto& s : bench) {  // B x Hq x Hkv x Sq x Skv x D: every Sq a decode step's (<= 16)
    std::string dims = s.get<std::string>();
    for (int field = 0; field < 3; ++field) dims = dims.substr(dims.find('x') + 1);
    EXPECT_LE(std::stoi(dims), 16) << s;
  }
  EXPECT_NE(bench.dump().find("16x64x8x1x4096x128:bshd"), std::string::npos) << bench.dump();
  const auto prefill = run_evo("context --stage 7 --task fp16-d128 --operator free --results-dir '" +
                               (source_root() / "results").string() + "'");
  ASSERT_EQ(prefill.exit_code, 0) << prefill.out;
  EXPECT_NE(json::parse(prefill.out)["i1"]["shapes"]["benchmark"], bench);
}

// The stage-9 variants call the shared primitives of variants/common/evo_split_kv.cuh (and the
// evo_mma.cuh it includes): a generator is shown them, or it sees calls without their code.
TEST(ContextCli, AStageSeesThePrimitivesItsVariantsInclude) {
  const auto r = run_evo("context --stage 9 --task fp16-d128 --operator free --results-dir '" +
                         (source_root() / "results").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string abi = json::parse(r.out)["i1"].value("abi_header", "");
  EXPECT_NE(abi.find("// ---- variants/common/evo_mma.cuh"), std::string::npos);
  EXPECT_NE(abi.find("__device__ __forceinline__ void mma16816("), std::string::npos);
  EXPECT_NE(abi.find("// ---- variants/common/evo_split_kv.cuh"), std::string::npos);
  EXPECT_NE(abi.find("__device__ __forceinline__ void softmax_step("), std::string::npos);
}

}  // namespace
}  // namespace evo::test
