// Shared memory a warp reads with ordinary loads (ldmatrix, ld.shared: the generic proxy) and
// then hands back, by an mbarrier arrival, to a TMA copy (the async proxy) needs a
// fence.proxy.async between the two: PTX orders accesses of different proxies only across one.
// Without it ptxas issued split_kv_tma's arrival right after the last ldmatrix of V was issued,
// not done, and the next block's V could land under it (the deep tier, 2026-11-29: two
// nondeterministic cases with the last 16 columns of a row wrong); tma_ws_fp8 released its Q tile
// after ld.shared the same way. In the SASS (nvdisasm, no GPU) every plain arrival
// (SYNCS.ARRIVE.TRANS64.A1T0) that follows a generic shared read must follow a
// FENCE.VIEW.ASYNC.S issued after that read (in program order, which is what ptxas emits).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "compile/sass_technique.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

// The arrivals in `sass` with a generic shared read (LDS, LDSM) since the last proxy fence.
std::vector<std::string> unfenced_arrivals(const std::string& sass, int* arrivals) {
  std::vector<std::string> out;
  bool read_since_fence = false;
  std::istringstream lines(sass);
  for (std::string l; std::getline(lines, l);) {
    if (l.find(" LDS") != std::string::npos) read_since_fence = true;  // LDS, LDS.64, LDSM.16.MT88.4, ...
    if (l.find("FENCE.VIEW.ASYNC.S") != std::string::npos) read_since_fence = false;
    if (l.find("SYNCS.ARRIVE.TRANS64.A1T0") == std::string::npos) continue;
    ++*arrivals;
    if (read_since_fence) out.push_back(l);
  }
  return out;
}

// Compiles one sampled configuration of every variant of `stage` per task for sm_90a and checks
// the SASS of each that uses mbarriers; returns how many it checked.
int expect_fenced(const std::string& stage, const std::string& tasks) {
  const auto cache = test::nvrtc_cache("proxy-fence-" + stage);
  auto r = test::run_evo("compile --stage " + stage + " --sample 1 --arch sm_90a --task " + tasks +
                         " --json --cache-dir " + cache.string());
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  int checked = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json j = json::parse(line);
    if (j["outcome"] != "ok" || j["compile"]["technique"].value("SYNCS", 0) == 0) continue;
    const std::string key = j["compile"]["cache_key"];
    std::string error;
    const auto sass = disassemble(cache / "nvrtc" / key.substr(0, 2) / (key + ".cubin"), &error);
    EXPECT_TRUE(sass) << error;
    if (!sass) continue;
    int arrivals = 0;
    for (const auto& l : unfenced_arrivals(*sass, &arrivals))
      ADD_FAILURE() << j["variant"] << " " << j["task"] << " " << j["params"].dump()
                    << ": an arrival with no proxy fence after a generic shared read:\n"
                    << l;
    ++checked;
  }
  return checked;
}

// Every kernel with an mbarrier ring: stage 7 (tma_ws, tma_ws_m64, tma_ws_fp8), stage 8 and
// stage 9's split_kv_tma (the two that read with ldmatrix or ld.shared before releasing).
TEST(ProxyFence, EveryTmaKernelFencesBeforeHandingReadSharedMemoryToTheCopyEngine) {
  if (!find_nvdisasm()) GTEST_SKIP() << "nvdisasm not found (PATH, CUDA_HOME, the nvidia wheel)";
  EXPECT_GE(expect_fenced("7", "fp16-d128,fp8-d128"), 3) << "tma_ws, tma_ws_m64, tma_ws_fp8";
  EXPECT_GE(expect_fenced("8", "fp16-d128"), 1) << "cluster";
  EXPECT_GE(expect_fenced("9", "bf16-d64,fp16-d128"), 2) << "split_kv_tma";
}

}  // namespace
}  // namespace evo
