// evo eval and evo evolve through the compile phase, with the real binary and NVRTC. Without a
// GPU both give their compile verdicts, then exit 2; the exec generator is the example LLM
// client (scripts/generators/llm_openai.py) talking to a mock chat server on 127.0.0.1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(EvalCli, FileOutsideVariantsGetsItsCompileVerdictThenNeedsAGpu) {
  std::string reason;
  const bool gpu = gpu_available(&reason);
  const fs::path dir = scratch_dir("eval");
  const std::string good = read_text(source_root() / "variants" / "5-swizzle" / "swizzle.cu");
  write_text(dir / "mine.cu", good);
  std::string broken = good;
  broken.replace(broken.find("#include \"evo_attn.cuh\""), 23, "#include \"evo_attn.cuh\"\nnot_a_type x;");
  write_text(dir / "broken.cu", broken);
  const std::string common = " --stage 5 --task fp16-d64 --results-dir " + shell_quote(dir / "results") +
                             " --populations-dir " + shell_quote(dir / "pops");
  const auto ok = run_evo("eval " + shell_quote(dir / "mine.cu") + common + " --quick");
  EXPECT_EQ(ok.exit_code, gpu ? 0 : 2) << ok.out;
  EXPECT_NE(ok.out.find("fp16-d64 5-swizzle/x-"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("resources: {"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("SASS technique: {\"GMMA\":"), std::string::npos) << "the verdict counts the SASS technique:\n"
                                                                          << ok.out;
  if (!gpu) {
    EXPECT_NE(ok.out.find("the gates and timing need a GPU"), std::string::npos) << ok.out;
  }
  const auto bad = run_evo("eval " + shell_quote(dir / "broken.cu") + common + " --json");
  EXPECT_EQ(bad.exit_code, gpu ? 0 : 2) << bad.out;
  const json v = json::parse(bad.out.substr(0, bad.out.rfind('}') + 1));
  ASSERT_EQ(v["verdicts"].size(), 1u) << bad.out;
  EXPECT_EQ(v["verdicts"][0]["outcome"], "compile");
  EXPECT_NE(v["verdicts"][0]["compile_log"].get<std::string>().find("not_a_type"), std::string::npos) << bad.out;
  EXPECT_EQ(run_evo("eval " + shell_quote(dir / "missing.cu") + common).exit_code, 1);
}

TEST(EvolveCli, MockLlmGeneratorThroughTheCompilePhaseWithFeedback) {
  std::string reason;
  if (gpu_available(&reason)) GTEST_SKIP() << "a GPU is present: the recorded GPU run covers this path";
  const fs::path dir = scratch_dir("evolve-mock"), root = source_root();
  const fs::path log = dir / "requests.jsonl";
  const std::string cmd =
      "python3 " + shell_quote(root / "tests" / "fixtures" / "evolve" / "mock_llm_server.py") + " --good " +
      shell_quote(root / "variants" / "5-swizzle" / "swizzle.cu") + " --cheat " +
      shell_quote(root / "tests" / "adversarial" / "cache_by_content.cu") + " --log " + shell_quote(log) + " -- " +
      EVO_BINARY + " evolve --stage 5 --task fp16-d64 --generations 5 --population 1 --results-dir " +
      shell_quote(dir / "results") + " --populations-dir " + shell_quote(dir / "pops") + " --generator 'exec:python3 " +
      (root / "scripts" / "generators" / "llm_openai.py").string() + "'";
  const auto [exit_code, out] = run_shell(cmd);
  EXPECT_EQ(exit_code, 2) << out;
  // Each canned reply gets its verdict.
  EXPECT_NE(out.find("gen 0 5-swizzle/x-"), std::string::npos) << out;
  EXPECT_NE(out.find("compiled; the GPU gates need a GPU"), std::string::npos) << out;
  EXPECT_NE(out.find(": compile — "), std::string::npos) << out;
  EXPECT_NE(out.find("the generator proposed nothing"), std::string::npos) << out;
  EXPECT_NE(out.find("duplicate"), std::string::npos) << out;
  EXPECT_NE(out.find("through the compile phase only"), std::string::npos) << out;
  // The failures' feedback is in the next requests the model sees.
  const auto reqs = read_jsonl(log);
  ASSERT_EQ(reqs.size(), 5u) << out;
  EXPECT_EQ(reqs[0]["auth"], "Bearer test-key");
  auto prompt = [&](size_t i) { return reqs[i]["body"]["messages"][1]["content"].get<std::string>(); };
  EXPECT_EQ(prompt(1).find("this_is_not_cuda"), std::string::npos) << "no failure yet in the second request";
  EXPECT_NE(prompt(2).find("this_is_not_cuda"), std::string::npos) << "the compile log reaches the third request";
  EXPECT_NE(prompt(4).find("the generator proposed nothing"), std::string::npos)
      << "the malformed reply is reported back";
  // The trace: one line per generation with request, response and verdicts.
  const auto traces = read_jsonl(fs::directory_iterator(dir / "results" / "evolve")->path());
  ASSERT_EQ(traces.size(), 5u);
  EXPECT_EQ(traces[1]["verdicts"][0]["outcome"], "compile");
  EXPECT_EQ(traces[4]["verdicts"][0]["outcome"], "duplicate");
  EXPECT_TRUE(traces[0]["request"].contains("i1"));
}

}  // namespace
}  // namespace evo::test
