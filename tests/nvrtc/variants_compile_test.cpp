// Every variant x config x task compiles for sm_80 and sm_90a through the resource gate, and
// broken fixtures are classified as they should be. Runs the real CLI, as users do.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

std::vector<json> json_lines(const std::string& out) {
  std::vector<json> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') v.push_back(json::parse(line));
  return v;
}

class AllVariants : public ::testing::TestWithParam<const char*> {};

TEST_P(AllVariants, EveryConfigCompilesOrIsAConstraint) {
  const std::string arch = GetParam();
  const auto cache = test::scratch_dir("all-" + arch);
  // --sample 12: every config of stages 0-6 (at most 8 each), an even spread of stage 7's 432.
  auto r = test::run_evo("compile --stage all --sample 12 --arch " + arch + " --json --cache-dir " + cache.string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  auto recs = json_lines(r.out);
  ASSERT_GT(recs.size(), 200u);
  size_t ok = 0, stage0_ok = 0, stage0 = 0, stage6_ok_on_hopper = 0, stage7_ok_on_hopper = 0;
  for (const auto& j : recs) {
    const std::string o = j["outcome"];
    // A valid config must compile within the caps; invalid ones are rejected as constraints;
    // sm_90a-only variants (wgmma, min_sm 90) are unsupported on sm_80 and nowhere else.
    const bool hopper_only_on_ampere = o == "unsupported" && arch == "sm_80" &&
                                       j["reason"].get<std::string>().find("needs sm_90") != std::string::npos;
    // A variant without fp16/bf16 (an fp8-only one) at the default tasks: Fp8Variants below compiles it.
    if (o == "unsupported" && j["reason"].get<std::string>().find("does not declare") != std::string::npos) continue;
    EXPECT_TRUE(o == "ok" || o == "constraints" || hopper_only_on_ampere)
        << j["variant"] << " " << j["task"] << " " << j["params"].dump() << ": " << o << " " << j["reason"];
    if (arch == "sm_90a" && j["stage"] == 6 && o == "ok") ++stage6_ok_on_hopper;
    if (arch == "sm_90a" && j["stage"] == 7 && o == "ok") ++stage7_ok_on_hopper;
    if (o == "ok") {
      ++ok;
      EXPECT_EQ(j["compile"]["resources"]["spill_stores"], 0);
      EXPECT_GT(j["compile"]["launch"]["threads"].get<int>(), 0);
    }
    if (j["stage"] == 0) {
      ++stage0;
      stage0_ok += o == "ok";
    }
  }
  EXPECT_GT(ok, 100u);
  EXPECT_EQ(stage0_ok, stage0) << "every stage-0 config is valid and must compile";
  if (arch == "sm_90a") {
    EXPECT_GE(stage6_ok_on_hopper, 16u) << "the wgmma stage must compile for sm_90a";
    EXPECT_GE(stage7_ok_on_hopper, 32u) << "the TMA stage must compile for sm_90a";
  }
}

// fp8 tasks are opt-in, so `--stage all` above never compiles them: every fp8 variant x config x
// fp8 task compiles (or is a constraint) for sm_89 and sm_90a, and each task has a valid config.
// --sample 12 keeps stage 7's fp8 variant (hundreds of configs per task) to an even spread;
// sm_90a-only variants (wgmma, min_sm 90) are unsupported on sm_89.
TEST(Fp8Variants, EveryConfigCompilesOrIsAConstraint) {
  const auto cache = test::scratch_dir("fp8-variants");
  for (const char* arch : {"sm_89", "sm_90a"}) {
    auto r =
        test::run_evo(std::string("compile --stage all --sample 12 --arch ") + arch +
                      " --task fp8-d64,fp8-d128,fp8-d64-causal,fp8-d128-causal --json --cache-dir " + cache.string());
    ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
    std::map<std::string, int> ok_per_task;
    for (const auto& j : json_lines(r.out)) {
      const std::string o = j["outcome"];
      if (o == "unsupported" && j["reason"].get<std::string>().find("does not declare fp8") != std::string::npos)
        continue;
      // sm_89 has 99 KB of shared memory per block: the largest tiles at D=128 are a resource verdict there.
      const bool too_big_for_ada = o == "resources" && std::string(arch) == "sm_89";
      const bool hopper_only_on_ada = o == "unsupported" && std::string(arch) == "sm_89" &&
                                      j["reason"].get<std::string>().find("needs sm_90") != std::string::npos;
      EXPECT_TRUE(o == "ok" || o == "constraints" || too_big_for_ada || hopper_only_on_ada)
          << arch << " " << j["variant"] << " " << j["task"] << " " << j["params"].dump() << ": " << o << " "
          << j["reason"];
      if (o == "ok") ++ok_per_task[j["task"].get<std::string>()];
    }
    for (const char* t : {"fp8-d64", "fp8-d128", "fp8-d64-causal", "fp8-d128-causal"})
      EXPECT_GE(ok_per_task[t], 2) << arch << " " << t << ": the fp8 variants must compile";
  }
}

// Plain names (no quotes): some CMake versions choke on quotes in discovered test names.
INSTANTIATE_TEST_SUITE_P(Arches, AllVariants, ::testing::Values("sm_80", "sm_90a"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

const char* kHeader = R"(/*evo
{"summary": "fixture", "params": {"BLOCK_M": [64, 32]}, "dtypes": ["fp16"], "head_dims": [64]}
*/
#include "evo_attn.cuh"
#ifndef BLOCK_M
#define BLOCK_M 64
#endif
)";

TEST(BrokenFixtures, AreClassified) {
  const std::string good_body = R"(EVO_EXPORT_LAUNCH(128, 0, BLOCK_M, 1, 0);
extern "C" __global__ void evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  if (threadIdx.x == 0 && blockIdx.x == 0) static_cast<evo_t*>(p.o)[0] = evo_from_float(1.0f);
}
)";
  auto root = test::make_repo(
      "broken", {{"variants/0-fix/syntax.cu", std::string(kHeader) + "int broken = ;\n" + good_body},
                 {"variants/1-fix/constraint.cu",
                  std::string(kHeader) + "EVO_CONSTRAINT(BLOCK_M == 64, \"BLOCK_M must be 64 here\");\n" + good_body},
                 {"variants/2-fix/nolaunch.cu",
                  std::string(kHeader) +
                      "extern \"C\" __global__ void evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {}\n"}});
  const std::string env = "EVO_ROOT=" + root.string();
  const std::string cache = " --cache-dir " + test::scratch_dir("broken-cache").string();

  auto syntax = test::run_evo("compile --stage 0 --task fp16-d64 --json" + cache, env);
  EXPECT_EQ(syntax.exit_code, 1);
  // #line makes NVRTC name the author's file and line: `int broken = ;` is line 8 of the file.
  EXPECT_NE(syntax.out.find("variants/0-fix/syntax.cu(8): error"), std::string::npos) << syntax.out;

  auto constraint = test::run_evo("compile --stage 1 --task fp16-d64 --json" + cache, env);
  EXPECT_EQ(constraint.exit_code, 0) << constraint.out;
  auto recs = json_lines(constraint.out);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0]["outcome"], "ok");
  EXPECT_EQ(recs[1]["outcome"], "constraints");
  EXPECT_NE(recs[1]["reason"].get<std::string>().find("BLOCK_M must be 64 here"), std::string::npos);

  auto nolaunch = test::run_evo("compile --stage 2 --task fp16-d64 --json" + cache, env);
  EXPECT_EQ(nolaunch.exit_code, 1);
  EXPECT_NE(nolaunch.out.find("EVO_EXPORT_LAUNCH"), std::string::npos) << nolaunch.out;

  auto unknown_arch = test::run_evo("compile --stage 0 --arch sm_70" + cache, env);
  EXPECT_EQ(unknown_arch.exit_code, 1);
  EXPECT_NE(unknown_arch.out.find("unknown arch 'sm_70'"), std::string::npos);
  auto unknown_stage = test::run_evo("compile --stage 9" + cache, env);
  EXPECT_EQ(unknown_stage.exit_code, 1);
  EXPECT_NE(unknown_stage.out.find("unknown stage 9"), std::string::npos);
  auto bad_task = test::run_evo("compile --stage 0 --task fp32-d64" + cache, env);
  EXPECT_EQ(bad_task.exit_code, 1);
  auto readonly = test::run_evo("compile --stage 1 --cache-dir /proc/evo-no-such-dir", env);
  EXPECT_EQ(readonly.exit_code, 1);
  EXPECT_NE(readonly.out.find("not writable"), std::string::npos) << readonly.out;

  // Malformed front matter: exit 1, the message names the file and the field.
  test::write_text(root / "variants/3-fix/bad.cu",
                   "/*evo {\"summary\": \"x\", \"dtypes\": [\"fp64\"], \"head_dims\": [64]} */\n");
  auto bad = test::run_evo("list", env);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("variants/3-fix/bad.cu"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("dtypes"), std::string::npos) << bad.out;
}

TEST(NoGpu, RunExitsTwoWithAClearMessage) {
  std::string reason;
  if (test::gpu_available(&reason)) GTEST_SKIP() << "a GPU is present; this checks the GPU-less path";
  auto r = test::run_evo("run --stage 0 --task fp16-d64 --budget 1 --results-dir " +
                         test::scratch_dir("nogpu-results").string() + " --populations-dir " +
                         test::scratch_dir("nogpu-pops").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("timing needs an NVIDIA GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0-baseline/wmma_scalar_pv"), std::string::npos) << "the compile table comes first";
}

}  // namespace
}  // namespace evo
