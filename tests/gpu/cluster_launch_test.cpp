// The worker's cluster (cuLaunchKernelEx with evo_launch.cluster_x) and persistent-grid launch
// paths, through the stage-8 kernel: CTAs of a cluster multicast K/V into each other and a grid
// of one CTA per SM walks the work items. Both must pass the gate on the small and ragged sets
// (odd lengths, GQA, BSHD, a tile past seq_q whose CTA only helps load) and the sampled cases,
// causal and not. Skips without a GPU and on GPUs older than sm_90.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpu/cuda_driver.h"
#include "store/records.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(ClusterLaunch, Stage8ClusterAndPersistentGridPassTheGate) {
  EVO_REQUIRE_GPU();
  const auto& cu = cuda_driver();
  CUdevice dev = 0;
  int major = 0;
  ASSERT_EQ(cu.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), CUDA_SUCCESS);
  if (major < 9) GTEST_SKIP() << "clusters with TMA multicast need sm_90 (this GPU: sm_" << major << "x)";
  const fs::path dir = scratch_dir("cluster-launch");
  const CliResult r =
      run_evo(fmt::format("run --stage 8 --task fp16-d128,bf16-d64-causal --budget 1 --shapes small,ragged "
                          "--seeds 0 --bench mission --gate-seed 2025 --results-dir '{}' --populations-dir '{}'",
                          (dir / "results").string(), (dir / "populations").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(r.out.size() > 4000 ? r.out.size() - 4000 : 0);
  const RecordSet rs = read_records(dir / "results");
  ASSERT_TRUE(rs.problems.empty()) << rs.problems.front();
  ASSERT_EQ(rs.records.size(), 2u) << r.out;
  for (const json& rec : rs.records) {
    EXPECT_EQ(rec["outcome"], "ok") << rec["task"] << ": " << rec["reason"];
    EXPECT_EQ(rec["compile"]["launch"]["cluster_x"], 2) << "the default launches clusters of two";
    EXPECT_EQ(rec["compile"]["launch"]["persistent"], 1) << "and a persistent grid";
    EXPECT_GT(rec["compile"]["technique"]["MULTICAST"].get<long>(), 0);
  }
}

}  // namespace
}  // namespace evo::test
