// Technique verification on real cubins: NVRTC compiles for sm_90a, nvdisasm reads the SASS,
// and a stage that requires TMA rejects a candidate without it as `technique` before any GPU
// time. The TMA maps a variant exports are read back from the same cubin.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "compile/cubin.h"
#include "compile/sass_technique.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

std::vector<json> records(const std::string& out) {
  std::vector<json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') v.push_back(json::parse(line));
  return v;
}

// What a TMA stage asks of its SASS: wgmma and TMA loads (stage 7's stage.json asks more).
const char* kStage7Requires = R"({"stage": 7, "slug": "fix", "requires_sass": {"HGMMA": 1, "UTMALDG": 1}})";

TEST(Technique, NvdisasmIsFound) {
  // Not a skip: without nvdisasm a stage that requires technique counts cannot run at all.
  ASSERT_TRUE(find_nvdisasm().has_value())
      << "nvdisasm not found: scripts/install-deps.sh installs the nvidia-cuda-nvdisasm wheel (or set EVO_NVDISASM)";
}

TEST(Technique, Stage7CandidateWithoutTmaIsRejected) {
  // Stage 6's wgmma kernel (cp.async loads, no TMA, no setmaxnreg) under stage 7's requirements.
  const std::string wgmma = test::read_text(test::source_root() / "variants/6-wgmma/wgmma.cu");
  auto root = test::make_repo("technique", {{"variants/7-fix/no_tma.cu", wgmma}});
  test::write_text(root / "variants/7-fix/stage.json", kStage7Requires);
  auto r = test::run_evo("compile --stage 7 --task fp16-d128 --sample 1 --json --cache-dir " +
                             test::scratch_dir("technique-cache").string(),
                         "EVO_ROOT=" + root.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto recs = records(r.out);
  ASSERT_EQ(recs.size(), 1u) << r.out;
  EXPECT_EQ(recs[0]["outcome"], "technique") << recs[0].dump();
  EXPECT_NE(recs[0]["reason"].get<std::string>().find("requires UTMALDG >= 1 in the SASS, found 0"), std::string::npos)
      << recs[0]["reason"];
  // The counts that were found are in the record: wgmma yes, TMA no.
  EXPECT_GT(recs[0]["compile"]["technique"]["HGMMA"].get<long>(), 0);
  EXPECT_EQ(recs[0]["compile"]["technique"]["UTMALDG"].get<long>(), 0);
  EXPECT_TRUE(recs[0]["gates"]["resources"]["pass"].get<bool>())
      << "the resource gate passed before the technique check";
}

TEST(Technique, Stage7KernelShowsItsTechnique) {
  auto r = test::run_evo("compile --stage 7 --task fp16-d128,bf16-d64-causal --sample 1 --json --cache-dir " +
                         test::nvrtc_cache("technique7-cache").string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 3000);
  std::vector<json> recs;  // the fp16/bf16 variants; tma_ws_fp8 is unsupported at these tasks
  for (auto& j : records(r.out))
    if (j["variant"] == "7-tma-ws/tma_ws" || j["variant"] == "7-tma-ws/tma_ws_m64") recs.push_back(j);
  ASSERT_EQ(recs.size(), 4u);
  for (const auto& j : recs) {
    ASSERT_EQ(j["outcome"], "ok") << j.dump();
    const json& t = j["compile"]["technique"];
    EXPECT_GT(t["HGMMA"].get<long>(), 0);
    EXPECT_EQ(t["GMMA"].get<long>(), t["HGMMA"].get<long>()) << "fp16/bf16 wgmma is HGMMA only";
    EXPECT_EQ(t["QGMMA"].get<long>(), 0);
    EXPECT_GT(t["UTMALDG"].get<long>(), 0);
    EXPECT_EQ(t["UTMASTG"].get<long>(), 0) << "the default writes O from the fragments (TMA_STORE=0)";
    EXPECT_GT(t["SYNCS"].get<long>(), 0);
    EXPECT_GE(t["USETMAXREG"].get<long>(), 2);
    EXPECT_EQ(j["compile"]["resources"]["spill_stores"], 0);
  }
}

TEST(Technique, RequirementWithoutDisassemblerIsAnEnvironmentError) {
  auto root = test::make_repo("technique-env", {{"variants/7-fix/no_tma.cu",
                                                 test::read_text(test::source_root() / "variants/6-wgmma/wgmma.cu")}});
  test::write_text(root / "variants/7-fix/stage.json", kStage7Requires);
  auto r = test::run_evo(
      "compile --stage 7 --task fp16-d64 --sample 1 --cache-dir " + test::scratch_dir("technique-env-cache").string(),
      "EVO_ROOT=" + root.string() + " EVO_NVDISASM=/nonexistent/nvdisasm");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("nvdisasm not found"), std::string::npos) << r.out;
}

TEST(TmaSpecs, ReadFromTheCubin) {
  // The stage-7 kernel's evo_tma, compiled with NVRTC through evo (the cache keeps the cubin).
  const auto cache = test::nvrtc_cache("tma-spec-cache");
  auto r = test::run_evo("compile --stage 7 --task fp16-d128 --sample 1 --json --cache-dir " + cache.string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  const std::string key = records(r.out).at(0)["compile"]["cache_key"];
  const std::string cubin = test::read_text(cache / "nvrtc" / key.substr(0, 2) / (key + ".cubin"));
  std::string why;
  auto specs = read_tma_specs(cubin, &why);
  ASSERT_TRUE(specs) << why;
  ASSERT_EQ(specs->size(), size_t(kTmaSlots));
  EXPECT_EQ((*specs)[0].tensor, 1u);  // Q: BLOCK_M = 128 rows (NCONS = 2), 64-column boxes, 128-byte swizzle
  EXPECT_EQ((*specs)[0].box_rows, 128u);
  EXPECT_EQ((*specs)[0].box_cols, 64u);
  EXPECT_EQ((*specs)[0].swizzle, 3u);
  EXPECT_EQ((*specs)[1].tensor, 2u);
  EXPECT_EQ((*specs)[1].box_rows, 64u);  // BLOCK_N default
  EXPECT_EQ((*specs)[3].tensor, 4u);
  EXPECT_EQ((*specs)[3].box_rows, 64u);
  // A variant without EVO_EXPORT_TMA has no maps (and is not an error).
  auto launch = read_launch_geometry(cubin, &why);
  ASSERT_TRUE(launch) << why;
  EXPECT_EQ(launch->threads, 384u);
}

}  // namespace
}  // namespace evo
