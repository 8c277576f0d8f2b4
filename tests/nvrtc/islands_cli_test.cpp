// `evo evolve --island` through the real binary and NVRTC, without a GPU (compile phase only):
// island 0's elites (records as its GPU run would have written them, with its trace) reach
// island 1 at the migration and not before, island 1 breeds from them, nothing of island 0's
// is lost, and the same seeds give the same proposals again. Bad --island / --devices values
// are one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A full evaluation of island 0 at generation `gen`, as `evo evolve --island 0/2` writes it.
json island0_record(const std::string& id, int block_m, int block_n, int nwarps, double fitness_us, int gen) {
  return {{"schema_version", "1.0"},
          {"kind", "run"},
          {"candidate_id", id},
          {"variant", "3-wmma-pv/mma_pv"},
          {"source_path", "variants/3-wmma-pv/mma_pv.cu"},
          {"source_sha256", "00"},
          {"task", "fp16-d64"},
          {"stage", 3},
          {"arch", "sm_90a"},
          {"params", {{"BLOCK_M", block_m}, {"BLOCK_N", block_n}, {"NWARPS", nwarps}}},
          {"time", "2026-11-23T00:00:00Z"},
          {"run_id", "r0"},
          {"origin", "evolve"},
          {"outcome", "ok"},
          {"reason", ""},
          {"benchmark", "default"},
          {"env", {{"gpu", "NVIDIA H200"}, {"gpu_key", "nvidia-h200"}}},
          {"fitness",
           {{"geomean_median_us", fitness_us}, {"geomean_p90_us", fitness_us}, {"shapes", 1}, {"complete", true}}},
          {"timing", json::array()},
          {"pruned", false},
          {"gpu_seconds", 1.0},
          {"evolve", {{"run", "ev-t-island0of2"}, {"generation", gen}, {"phase", "full"}, {"island", "0/2"}}}};
}

// Island 0 has done generation 0 (two elites) and is in generation 1 (one record so far).
fs::path island0_history(const std::string& name, std::string& records_text) {
  const fs::path dir = scratch_dir(name);
  records_text = island0_record("island0best", 128, 64, 8, 900, 0).dump() + "\n" +
                 island0_record("island0second", 64, 64, 4, 950, 0).dump() + "\n" +
                 island0_record("island0gen1", 128, 32, 4, 100, 1).dump() + "\n";
  write_text(dir / "results" / "island0.jsonl", records_text);
  write_text(dir / "results" / "evolve" / "ev-t-island0of2.trace.jsonl",
             json{{"run", "ev-t-island0of2"}, {"generation", 0}}.dump() + "\n");
  return dir;
}

CliResult island1(const fs::path& dir) {
  return run_evo(
      "evolve --stage 3 --task fp16-d64 --island 1/2 --island-group t --migrate-every 1 --generations 2 "
      "--population 2 --migrate-wait 5 --rng-seed 3 --generator genetic --results-dir " +
      shell_quote(dir / "results") + " --populations-dir " + shell_quote(dir / "pops"));
}

TEST(IslandsCli, AnElitOfIslandZeroIsIslandOnesParentAfterTheMigrationNotBefore) {
  std::string reason;
  if (gpu_available(&reason)) GTEST_SKIP() << "a GPU is present: this drives the compile-only path";
  std::string island0;
  const fs::path dir = island0_history("islands-cli", island0);
  const CliResult r = island1(dir);
  EXPECT_EQ(r.exit_code, 2) << r.out;  // no GPU: the generations ran through the compile phase
  EXPECT_NE(r.out.find("island 1/2 (from --island) of search 't'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("generation 1: imported 2 elite(s) of the other islands"), std::string::npos) << r.out;
  const auto trace = read_jsonl(dir / "results" / "evolve" / "ev-t-island1of2.trace.jsonl");
  ASSERT_EQ(trace.size(), 3u) << r.out;  // generations 0 and 1, then `finished`
  // Generation 0: evolved separately (no import yet, nothing to breed from).
  EXPECT_FALSE(trace[0].contains("migration"));
  EXPECT_TRUE(trace[0]["request"]["parents"].empty()) << trace[0].dump();
  // Generation 1: island 0's elites of generation 0 arrived (not its generation-1 record) ...
  const json imported = trace[1]["migration"]["imported"];
  ASSERT_EQ(imported.size(), 2u) << trace[1].dump();
  EXPECT_EQ(imported[0]["candidate_id"], "island0best");
  EXPECT_EQ(imported[0]["from"], "ev-t-island0of2");
  EXPECT_EQ(imported[1]["candidate_id"], "island0second");
  // ... are island 1's parents, best first, and its proposals descend from them (`genetic` names
  // its parents; the builtin strategy learns from them without breeding).
  EXPECT_EQ(trace[1]["request"]["parents"], json({"island0best", "island0second"}));
  bool bred = false;
  for (const auto& p : trace[1]["response"])
    bred = bred || p["parent"].get<std::string>().find("island0") != std::string::npos;
  EXPECT_TRUE(bred) << trace[1]["response"].dump();
  EXPECT_TRUE(trace[2].value("finished", false));
  // Nothing of island 0's was lost or changed.
  EXPECT_EQ(read_text(dir / "results" / "island0.jsonl"), island0);
  // The same seeds and history give the same proposals.
  std::string again_text;
  const fs::path again = island0_history("islands-cli-again", again_text);
  EXPECT_EQ(island1(again).exit_code, 2);
  const auto trace2 = read_jsonl(again / "results" / "evolve" / "ev-t-island1of2.trace.jsonl");
  ASSERT_EQ(trace2.size(), 3u);
  for (size_t g = 0; g < 2; ++g) EXPECT_EQ(trace2[g]["response"], trace[g]["response"]) << "generation " << g;
}

TEST(IslandsCli, BadIslandAndDevicesAreOneLineErrors) {
  const fs::path dir = scratch_dir("islands-bad");
  const std::string common = " --stage 3 --task fp16-d64 --results-dir " + shell_quote(dir / "r") +
                             " --populations-dir " + shell_quote(dir / "p");
  const CliResult bad = run_evo("evolve --island 3/2" + common);
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("--island 3/2: the index must be below the count (0-based: 0/2 to 1/2)"), std::string::npos)
      << bad.out;
  EXPECT_EQ(bad.out.find('\n'), bad.out.size() - 1) << "one line: " << bad.out;
  const CliResult both = run_evo("evolve --island 0/2 --resume x" + common);
  EXPECT_EQ(both.exit_code, 1) << both.out;
  std::string reason;
  const bool gpu = gpu_available(&reason);
  const CliResult seven = run_evo("evolve --devices 7 --generations 1" + common);
  // No driver: exit 2 as for one GPU; a host without device 7 refuses it with exit 1.
  EXPECT_EQ(seven.exit_code, gpu ? 1 : 2) << seven.out;
  if (gpu) {
    EXPECT_NE(seven.out.find("--devices 7: this machine has no CUDA device 7"), std::string::npos) << seven.out;
  }
  EXPECT_EQ(run_evo("evolve --devices 0,x --generations 1" + common).exit_code, 1);
}

}  // namespace
}  // namespace evo::test
