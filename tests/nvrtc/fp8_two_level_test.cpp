// The stage-7 FP8 kernel's two-level O sum and register split, through NVRTC and nvdisasm (no GPU).
// FP8 wgmma adds into its accumulator with about 13 mantissa bits, so tma_ws_fp8 sums P·V of each
// key tile in a fresh accumulator and adds it into an f32 O outside the tensor cores: in the SASS,
// with PROMOTE=1 and L_BY_MMA=1 (P·V's N = HD + 8 tells its QGMMAs from S's N = 128), the first
// k-step of every P·V chain overwrites (C operand RZ), so no chain reads the last tile's sum; the
// kernel before the change started only an item's first tile that way (a runtime predicate).
// Every sampled configuration the constraints allow compiles without a spill, and the setmaxnreg
// split fits the CTA's own allocation: ptxas's per-thread count times the warpgroups, which a
// split of 2 x 232 + 48 = 512 > 3 x 168 did not (every launch hung on the H200).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "compile/sass_technique.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

struct PvChains {
  int qgmma = 0;  // P·V QGMMAs (k-steps)
  int fresh = 0;  // of them, C = RZ
};

PvChains pv_chains(const std::string& sass, int head_dim) {
  const std::string pv = "QGMMA.64x" + std::to_string(head_dim + 8) + "x32";
  PvChains c;
  std::istringstream lines(sass);
  for (std::string l; std::getline(lines, l);) {
    if (l.find(pv) == std::string::npos) continue;
    ++c.qgmma;
    if (l.find(", RZ, !UPT") != std::string::npos) ++c.fresh;
  }
  return c;
}

TEST(Fp8TwoLevel, EveryPvTileStartsFreshAndTheSplitFits) {
  if (!find_nvdisasm()) GTEST_SKIP() << "nvdisasm not found (PATH, CUDA_HOME, the nvidia wheel)";
  const auto cache = test::nvrtc_cache("fp8-two-level");
  const auto r = test::run_evo(
      "compile --stage 7 --task fp8-d128,fp8-d64 --sample 16 --arch sm_90a --json --cache-dir " + cache.string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  int ok = 0, pv_checked = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json j = json::parse(line);
    if (j["variant"] != "7-tma-ws/tma_ws_fp8") continue;
    const std::string outcome = j["outcome"];
    const json& P = j["params"];
    EXPECT_TRUE(outcome == "ok" || outcome == "constraints") << P.dump() << ": " << outcome << " " << j["reason"];
    if (outcome != "ok") continue;
    ++ok;
    const json& res = j["compile"]["resources"];
    EXPECT_EQ(res["spill_stores"], 0) << P.dump();
    EXPECT_EQ(res["spill_loads"], 0) << P.dump();
    const long ncons = P["NCONS"], cons = P["CONS_REGS"], prod = P["PROD_REGS"];
    EXPECT_LE(ncons * cons + prod, (ncons + 1) * res["registers"].get<long>())
        << P.dump() << ": setmaxnreg.inc would wait for registers the CTA does not hold";
    if (P["PROMOTE"] != 1 || P["L_BY_MMA"] != 1) continue;
    const std::string key = j["compile"]["cache_key"];
    std::string error;
    const auto sass = disassemble(cache / "nvrtc" / key.substr(0, 2) / (key + ".cubin"), &error);
    ASSERT_TRUE(sass) << error;
    const int head_dim = j["task"].get<std::string>().find("d128") != std::string::npos ? 128 : 64;
    const PvChains c = pv_chains(*sass, head_dim);
    EXPECT_GT(c.qgmma, 0) << P.dump();
    EXPECT_EQ(c.qgmma % 4, 0) << P.dump() << ": 128 keys are four k32 steps";
    EXPECT_EQ(c.fresh * 4, c.qgmma) << P.dump() << ": a P·V chain adds into the previous tile's accumulator";
    ++pv_checked;
  }
  EXPECT_GE(ok, 4);
  EXPECT_GE(pv_checked, 1);
}

}  // namespace
}  // namespace evo
