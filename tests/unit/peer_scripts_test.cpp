// The peer scripts (scripts/peers_sdpa.py, scripts/peers_fa4.py) on the CPU: their help and
// exit codes without PyTorch, and the records they write when run against the stand-in torch and
// flash-attn-4 of tests/fixtures/peers/fake (python3 -S: the host's site-packages stay out, so a
// GPU host's real torch is not picked up).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::read_jsonl;
using test::read_text;
using test::run_shell;
using test::scratch_dir;
using test::shell_quote;
using test::source_root;

std::string script(const std::string& name) { return shell_quote(source_root() / "scripts" / name); }

// python3 -S on a script with the fake modules first on the path; env is "K=V ..." or empty.
test::CliResult run_with_fake(const std::string& args, const std::string& env = "") {
  const fs::path fake = source_root() / "tests" / "fixtures" / "peers" / "fake";
  return run_shell("env PYTHONPATH=" + shell_quote(fake) + " " + env + " python3 -S " + args);
}

const json* find_record(const json& list, const std::string& variant, const std::string& shape) {
  for (const auto& r : list)
    if (r.value("variant", "") == variant && r.value("shape", "") == shape) return &r;
  return nullptr;
}

TEST(PeerScripts, Fa4HelpNeedsNoTorchAndNamesTheExitCodes) {
  const auto r = run_shell("python3 -S " + script("peers_fa4.py") + " --help");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("flash_attn.cute.flash_attn_func"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos) << r.out;
}

TEST(PeerScripts, Fa4WithoutTorchExits2WithOneLine) {
  const auto r = run_shell("python3 -S " + script("peers_fa4.py") + " --sets mission 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("peers_fa4: PyTorch is needed", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(PeerScripts, Fa4WithoutGpuExits2AndBadTaskExits1) {
  const auto no_gpu = run_with_fake(script("peers_fa4.py") + " --sets mission", "FAKE_TORCH_NO_GPU=1");
  EXPECT_EQ(no_gpu.exit_code, 2) << no_gpu.out;
  EXPECT_NE(no_gpu.out.find("peers_fa4: no CUDA device"), std::string::npos) << no_gpu.out;
  const auto fp8 = run_with_fake(script("peers_fa4.py") + " --tasks fp8-d64");
  EXPECT_EQ(fp8.exit_code, 1) << fp8.out;
  EXPECT_NE(fp8.out.find("peers_fa4: unknown task 'fp8-d64'"), std::string::npos) << fp8.out;
}

// BSHD views of the shape's own layout, K/V with Hkv heads, the causal flag and 1/sqrt(D); a
// refused shape gets an "unsupported" record with FA4's reason; other peers' records are kept.
TEST(PeerScripts, Fa4RecordsEveryShapeAndKeepsOtherPeers) {
  const fs::path dir = scratch_dir("peers-fa4");
  const fs::path out = dir / "peers.json";
  const fs::path log = dir / "calls.jsonl";
  std::ofstream(out) << R"([{"variant": "peer/pytorch-sdpa-cudnn", "task": "fp16-d64", "shape": "x"}])"
                     << "\n";
  const auto r = run_with_fake(script("peers_fa4.py") + " --tasks fp16-d64,bf16-d128-causal --sets mission,regimes" +
                                   " --out " + shell_quote(out),
                               "FAKE_FA4_LOG=" + shell_quote(log) + " FAKE_FA4_REFUSE_SQ=16");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json list = json::parse(read_text(out));
  ASSERT_EQ(list.size(), 13u) << list.dump(1);  // 2 tasks x 6 shapes, and the cuDNN record
  EXPECT_NE(find_record(list, "peer/pytorch-sdpa-cudnn", "x"), nullptr);

  const json* ok = find_record(list, "peer/flash-attn-4", "8x32x8x1024x1024x64");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ((*ok)["outcome"], "ok");
  EXPECT_EQ((*ok)["kind"], "peer");
  EXPECT_EQ((*ok)["source_path"], "scripts/peers_fa4.py");
  EXPECT_EQ((*ok)["timing"][0]["median_us"], 250.0);  // the fake's events read 0.25 ms
  EXPECT_EQ((*ok)["timing"][0]["set"], "regimes");
  EXPECT_TRUE((*ok)["env"].contains("flash_attn_4"));
  EXPECT_TRUE((*ok)["env"].contains("fa4_inputs"));

  const json* refused = find_record(list, "peer/flash-attn-4", "8x32x8x16x8192x128:bshd");
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ((*refused)["outcome"], "unsupported");
  EXPECT_EQ((*refused)["reason"], "AssertionError: seqlen_q 16 refused by the fake");
  EXPECT_TRUE((*refused)["timing"].empty());

  // What FA4 was handed: a BHSD shape as a transposed view (strides of BHSD storage), GQA heads.
  bool saw_view = false, saw_causal_bshd = false;
  for (const auto& call : read_jsonl(log)) {
    if (call["q"] == json({8, 1024, 32, 64})) {
      EXPECT_EQ(call["k"], json({8, 1024, 8, 64}));
      EXPECT_EQ(call["q_stride"], json({2097152, 64, 65536, 1}));
      EXPECT_EQ(call["causal"], false);
      EXPECT_DOUBLE_EQ(call["scale"].get<double>(), 0.125);
      saw_view = true;
    }
    if (call["q"] == json({2, 512, 32, 128})) {
      EXPECT_EQ(call["q_stride"], json({2097152, 4096, 128, 1}));  // :bshd, contiguous
      EXPECT_EQ(call["causal"], true);
      saw_causal_bshd = true;
    }
  }
  EXPECT_TRUE(saw_view);
  EXPECT_TRUE(saw_causal_bshd);
}

// peers_sdpa.py's records through the functions peers_fa4.py shares with it: a refusal keeps
// PyTorch's reason, every backend gets its own record.
TEST(PeerScripts, SdpaRecordsThroughTheSharedFunctions) {
  const fs::path out = scratch_dir("peers-sdpa") / "peers.json";
  const auto r = run_with_fake(script("peers_sdpa.py") + " --tasks fp16-d128 --sets mission,1x8x8x16384x16384xD" +
                               " --backends flash,cudnn --out " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json list = json::parse(read_text(out));
  ASSERT_EQ(list.size(), 4u) << list.dump(1);
  const json* ok = find_record(list, "peer/pytorch-sdpa-cudnn", "1x8x8x512x512x128");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ((*ok)["outcome"], "ok");
  EXPECT_EQ((*ok)["env"]["cudnn"], 91900);
  const json* refused = find_record(list, "peer/pytorch-sdpa-flash", "1x8x8x16384x16384x128");
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ((*refused)["outcome"], "unsupported");
  EXPECT_EQ((*refused)["reason"], "No available kernel. Aborting execution.");
}

}  // namespace
}  // namespace evo
