// Bad input that used to corrupt or lose data (issue 32), through the real binary: each gets a
// one-line message naming what to fix and a documented exit code, and nothing is lost.
#include <gtest/gtest.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/paths.h"
#include "policy/config.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path gate_fixture(const std::string& name) { return source_root() / "tests" / "fixtures" / "gate" / name; }

// A pid no process has now: a shell that printed its own and exited.
pid_t dead_pid() { return pid_t(std::stol(run_shell("sh -c 'echo $$'").out)); }

TEST(BadInputCli, NonUtf8ArgumentsAreUsageErrorsNamingTheArgument) {
  auto r = run_evo("context --stage 5 --gpu \"$(printf 'h\\377200')\"");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the value of --gpu ('h\xEF\xBF\xBD"
                       "200') is not valid UTF-8 (byte 0xff at offset 1)"),
            std::string::npos)
      << r.out;
  r = run_evo("eval \"$(printf 'mine\\300.cu')\"");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("argument 2 ('mine"), std::string::npos) << r.out;
  r = run_evo("export --task fp16-d64 --out=\"$(printf 'pkg\\377')\"");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the value of --out"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
}

TEST(BadInputCli, NumericFlagsOutOfRangeAreUsageErrorsNamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run --stage 0 --budget -1", "--budget: -1 is out of range: give a finite number >= 1"},
      {"run --stage 0 --budget 0", "--budget: 0 is out of range"},
      {"run --stage 0 --seeds 0,-2", "--seeds: -2 is out of range"},
      {"run --stage 0 --device -1", "--device: -1 is out of range"},
      {"run --stage 0 --jobs -2", "--jobs: -2 is out of range"},
      {"run --stage -1", "--stage: -1 is out of range"},
      {"evolve --stage 3 --budget-gpu-s -5", "--budget-gpu-s: -5 is out of range: give a finite number >= 0"},
      {"evolve --stage 3 --budget-gpu-s nan", "--budget-gpu-s: nan is out of range"},
      {"evolve --stage 3 --budget-gpu-s inf", "--budget-gpu-s: inf is out of range"},
      {"evolve --stage 3 --budget-gpu-s lots", "--budget-gpu-s: 'lots' is not a number"},
      {"evolve --stage 3 --promote -1", "--promote: -1 is out of range: give a finite number >= 1"},
      {"evolve --stage 3 --generations 0", "--generations: 0 is out of range"},
      {"evolve --stage 3 --population 0", "--population: 0 is out of range"},
      {"evolve --stage 3 --generator-timeout 0", "--generator-timeout: 0 is out of range"},
      {"evolve --stage 3 --migrate-wait -1", "--migrate-wait: -1 is out of range"},
      {"evolve --stage 3 --rng-seed -1", "--rng-seed: -1 is out of range"},
      {"population remeasure --top 0", "--top: 0 is out of range"},
      {"population remeasure --stages 7,-8", "--stages: -8 is out of range"},
      {"population remeasure --elites-of custom-12", "--elites-of: 'custom-12' is not a population's benchmark"},
      {"population remeasure --shipped --stages 7", "--stages excludes --shipped"},
      {"context --stage 5 --max-failures -1", "--max-failures: -1 is out of range"},
      {"compile --stage 0 --sample -3", "--sample: -3 is out of range"},
      {"eval x.cu --stage -1", "--stage: -1 is out of range"},
      {"gate --baseline b.json --confidence nan", "--confidence: nan is out of range"},
      {"gate --baseline b.json --min-effect -0.1", "--min-effect: -0.1 is out of range"},
      {"ablate d.json --budgets 25,nan", "--budgets: nan is out of range"},
      {"ablate d.json --within -1", "--within: -1 is out of range"},
      {"ablate d.json --horizon 0", "--horizon: 0 is out of range"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_evo(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
  }
}

TEST(BadInputCli, GatesJsonValuesOutOfRangeAreRefusedAtLoadNamingTheKey) {
  const json good = json::parse(read_text(source_root() / "gates" / "gates.json"));
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& g) { g["tolerances"]["fp16"]["atol"] = -0.1; }, "tolerances.fp16.atol is -0.1"},
      {[](json& g) { g["tolerances"]["bf16"]["inputs"]["large_v"]["rel_l2"] = -1; },
       "tolerances.bf16.inputs.large_v.rel_l2 is -1"},
      {[](json& g) { g["timing"]["shape_budget_ms"] = 0; }, "timing.shape_budget_ms is 0"},
      {[](json& g) { g["timing"]["target_rse"] = -0.005; }, "timing.target_rse is -0.005"},
      {[](json& g) { g["limits"]["gate_case_s"] = -1; }, "limits.gate_case_s is -1"},
      {[](json& g) { g["limits"]["compile_s"] = 0; }, "limits.compile_s is 0"},
      {[](json& g) { g["regression"]["confidence"] = 1.5; }, "regression.confidence is 1.5"},
      {[](json& g) { g["regression"]["min_effect"] = -0.03; }, "regression.min_effect is -0.03"},
      {[](json& g) { g["inputs"]["normal"]["qk_std"] = -1; }, "inputs.normal.qk_std is -1"},
  };
  for (const auto& [damage, message] : cases) {
    json g = good;
    damage(g);
    std::string what;
    EXPECT_EQ(exit_code_of([&] { parse_gates_config(g.dump(), "gates/gates.json"); }, &what), kExitUsage) << message;
    EXPECT_NE(what.find("gates/gates.json " + message), std::string::npos) << what;
  }
  // Through the binary: any command that loads the repository says so, exit 1.
  const fs::path repo = make_repo("bad-gates", {});
  json g = good;
  g["tolerances"]["fp16"]["rtol"] = -0.003;
  write_text(repo / "gates" / "gates.json", g.dump(2));
  const auto r = run_evo("list", "EVO_ROOT=" + shell_quote(repo));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("tolerances.fp16.rtol is -0.003: it must be a finite number >= 0"), std::string::npos) << r.out;
}

// From another directory, results/ and populations/ are the repository's (found as variants/
// are), not the working directory's.
TEST(BadInputCli, StoreFoldersDefaultToTheRepositoryEvoFound) {
  const fs::path repo = make_repo("store-default-repo", {});
  const fs::path elsewhere = scratch_dir("store-default-elsewhere");
  const auto r = run_shell("cd " + shell_quote(elsewhere) + " && EVO_ROOT=" + shell_quote(repo) + " " + EVO_BINARY +
                           " merge " + shell_quote(gate_fixture("unchanged.jsonl")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(repo / "results" / "merged.jsonl")) << r.out;
  EXPECT_TRUE(fs::exists(repo / "populations" / "nvidia-h200" / "fp16-d64.json")) << r.out;
  EXPECT_NE(r.out.find((repo / "results" / "merged.jsonl").string()), std::string::npos) << "says where:\n" << r.out;
  EXPECT_FALSE(fs::exists(elsewhere / "results")) << "a stray ./results";
  EXPECT_FALSE(fs::exists(elsewhere / "populations")) << "a stray ./populations";
  // evo context from elsewhere sees the repository's elites (the committed ones here).
  const auto c =
      run_shell("cd " + shell_quote(elsewhere) + " && " + EVO_BINARY + " context --stage 5 --task fp16-d64 --json");
  ASSERT_EQ(c.exit_code, 0) << c.out.substr(0, 2000);
  const json req = json::parse(c.out.substr(c.out.find('{')));
  EXPECT_FALSE(req["i2"]["elites"].empty()) << req["i2"].dump().substr(0, 500);
}

TEST(BadInputCli, NotWritableNamesThePathAndTheFlagThatMovesIt) {
  const fs::path blocked = "/proc/evo-not-writable";  // /proc takes no new folders, even for root
  auto r = run_evo("merge " + shell_quote(gate_fixture("unchanged.jsonl")) + " --results-dir " +
                   shell_quote(blocked / "results"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("results dir /proc/evo-not-writable/results is not writable (it cannot be created: /proc is "
                       "not writable): choose another with --results-dir"),
            std::string::npos)
      << r.out;
  r = run_evo("population rebuild --results-dir " + shell_quote(gate_fixture("")) + " --populations-dir " +
              shell_quote(blocked / "pops"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("choose another with --populations-dir"), std::string::npos) << r.out;
}

TEST(BadInputCli, AKilledRunsLeftoversGoAtTheNextStartOnlyWhenTheirOwnerIsGone) {
  const fs::path tmp = scratch_dir("leftovers-tmp");
  const pid_t dead = dead_pid(), alive = ::getpid();
  write_text(tmp / ("evo-generator-" + std::to_string(dead) + "-0.in"), "{}");
  write_text(tmp / ("evo-" + std::to_string(dead) + "-20261121T000000Z-abcd") / "reference-fp16-d64" / "x.bin", "x");
  write_text(tmp / ("evo-generator-" + std::to_string(alive) + "-0.in"), "{}");
  write_text(tmp / "evo-cache" / "keep", "x");
  auto r = run_evo("list", "TMPDIR=" + shell_quote(tmp));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(tmp / ("evo-generator-" + std::to_string(dead) + "-0.in")));
  EXPECT_FALSE(fs::exists(tmp / ("evo-" + std::to_string(dead) + "-20261121T000000Z-abcd")));
  EXPECT_TRUE(fs::exists(tmp / ("evo-generator-" + std::to_string(alive) + "-0.in"))) << "its owner still runs";
  EXPECT_TRUE(fs::exists(tmp / "evo-cache" / "keep"));

  const fs::path pops = scratch_dir("leftovers-pops");
  const fs::path gpu = pops / "nvidia-h200";
  write_text(gpu / ("fp16-d64.json.tmp." + std::to_string(dead) + ".0"), "{\"half");
  write_text(gpu / ("fp16-d64.json.tmp." + std::to_string(alive) + ".3"), "{\"half");
  r = run_evo("population rebuild --results-dir " + shell_quote(gate_fixture("unchanged.jsonl")) +
              " --populations-dir " + shell_quote(pops));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(gpu / ("fp16-d64.json.tmp." + std::to_string(dead) + ".0")));
  EXPECT_TRUE(fs::exists(gpu / ("fp16-d64.json.tmp." + std::to_string(alive) + ".3")));
  EXPECT_TRUE(fs::exists(gpu / "fp16-d64.json"));
}

}  // namespace
}  // namespace evo::test
