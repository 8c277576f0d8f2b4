// Every variant compiles for one task per architecture (sm_80, sm_90a; fp8 on sm_89, sm_90a)
// through the resource gate, taking both verdict paths (ok and constraints), and broken fixtures
// are classified as they should be. Runs the real CLI, as users do. Every default task per
// architecture is the exhaustive label's (tests/exhaustive/, not run by CI: README).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "support/compile_sweep.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;
using test::json_lines;

// One task per architecture, different ones so that between them both dtypes, both head dims
// and the causal mask are compiled.
TEST(AllVariants, sm_80) { test::check_every_variant_compiles("sm_80", "fp16-d64-causal"); }
TEST(AllVariants, sm_90a) { test::check_every_variant_compiles("sm_90a", "bf16-d128"); }

TEST(Fp8Variants, sm_89) { test::check_fp8_variants_compile("sm_89", {"fp8-d64"}); }
TEST(Fp8Variants, sm_90a) { test::check_fp8_variants_compile("sm_90a", {"fp8-d128-causal"}); }

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
