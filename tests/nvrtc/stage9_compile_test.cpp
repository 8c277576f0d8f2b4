// Stage 9 (split-KV, pack-GQA decode) through NVRTC: every fp16/bf16 task at D=64 and D=128,
// causal or not, compiles for sm_80 and sm_90a within the resource caps (or is a constraint),
// and the cubin exports the split launch evo_launch.h's rules read: ABI 2, kv_splits_max and
// kv_block of the tunables, pack_gqa 1, no cluster, not persistent. On sm_90a split_kv_tma (min_sm
// 90) compiles too, its K/V loads TMA boxes on mbarriers: one UTMALDG per 64 columns of K and of V.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

class Stage9 : public ::testing::TestWithParam<const char*> {};

TEST_P(Stage9, EveryTaskCompilesAndExportsTheSplitLaunch) {
  const std::string arch = GetParam();
  const auto cache = test::nvrtc_cache("stage9-" + arch);
  const char* tasks =
      "fp16-d64,fp16-d64-causal,fp16-d128,fp16-d128-causal,bf16-d64,bf16-d64-causal,bf16-d128,bf16-d128-causal";
  // Technique counts on sm_90a only: they are read below for split_kv_tma, which sm_80 does not run, and
  // stage 9 requires none (test::kNoTechniqueCounts).
  auto r = test::run_evo(
      "compile --stage 9 --sample 3 --arch " + arch + " --task " + tasks + " --json --cache-dir " + cache.string(),
      arch == "sm_90a" ? "" : test::kNoTechniqueCounts);
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  std::map<std::string, int> ok_per_task, tma_ok_per_task;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json j = json::parse(line);
    const std::string o = j["outcome"];
    const bool tma = j["variant"] == "9-decode/split_kv_tma";
    if (tma && arch == "sm_80") {  // min_sm 90: TMA and mbarrier transaction counts are Hopper's
      EXPECT_EQ(o, "unsupported") << j["task"] << " " << j["params"].dump() << ": " << j["reason"];
      continue;
    }
    EXPECT_TRUE(o == "ok" || o == "constraints")
        << j["task"] << " " << j["params"].dump() << ": " << o << " " << j["reason"];
    if (o != "ok") continue;
    ++ok_per_task[j["task"].get<std::string>()];
    const json& L = j["compile"]["launch"];
    EXPECT_EQ(L["cluster_x"], 1);
    EXPECT_EQ(L["persistent"], 0);
    EXPECT_EQ(L["pack_gqa"], 1);
    EXPECT_EQ(L["kv_splits_max"], j["params"]["KV_SPLITS"]);
    EXPECT_EQ(L["kv_block"], j["params"]["BLOCK_N"]);
    EXPECT_EQ(L["rows_per_cta"], j["params"]["BLOCK_M"]);
    EXPECT_EQ(j["compile"]["resources"]["spill_stores"], 0);
    if (!tma) continue;
    ++tma_ok_per_task[j["task"].get<std::string>()];
    const json& tech = j["compile"]["technique"];
    const int head_dim = j["task"].get<std::string>().find("d128") != std::string::npos ? 128 : 64;
    EXPECT_GE(tech["UTMALDG"], 2 * (head_dim / 64)) << j["task"] << " " << j["params"].dump();
    EXPECT_GT(tech["SYNCS"], 0) << j["task"] << " " << j["params"].dump();
  }
  for (const char* t : {"fp16-d64", "fp16-d64-causal", "fp16-d128", "fp16-d128-causal", "bf16-d64", "bf16-d64-causal",
                        "bf16-d128", "bf16-d128-causal"}) {
    EXPECT_GE(ok_per_task[t], 1) << arch << " " << t << ": stage 9 must compile";
    if (arch == "sm_90a") {
      EXPECT_GE(tma_ok_per_task[t], 1) << t << ": split_kv_tma must compile";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Arches, Stage9, ::testing::Values("sm_80", "sm_90a"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace evo
