// Stage 8 (clusters, TMA multicast, persistent grid) on real cubins: the kernel's SASS shows
// multicast TMA loads and its cubin exports a cluster, persistent launch; the same kernel built
// without clusters has no multicast and stage 8 rejects it as `technique` before any GPU time.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

std::vector<json> records_of(const std::string& out) {
  std::vector<json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') v.push_back(json::parse(line));
  return v;
}

// The stage-8 kernel with one value in a tunable's domain (the front matter's first value is
// the default, so this pins it).
std::string pinned(std::string src, const std::string& key, const std::string& domain, const std::string& value) {
  const std::string from = "\"" + key + "\": " + domain, to = "\"" + key + "\": [" + value + "]";
  const size_t at = src.find(from);
  if (at == std::string::npos)
    ADD_FAILURE() << "front matter has no " << from;
  else
    src.replace(at, from.size(), to);
  return src;
}

TEST(Technique, Stage8CandidateWithoutMulticastIsRejected) {
  // CLUSTER=1 (outside the stage's domain, which requires multicast): the same TMA + wgmma +
  // setmaxnreg kernel, each CTA loading its own K/V.
  const std::string src = test::read_text(test::source_root() / "variants/8-cluster/cluster.cu");
  auto root =
      test::make_repo("technique8", {{"variants/8-cluster/no_multicast.cu", pinned(src, "CLUSTER", "[2]", "1")}});
  test::write_text(root / "variants/8-cluster/stage.json",
                   test::read_text(test::source_root() / "variants/8-cluster/stage.json"));
  auto r = test::run_evo("compile --stage 8 --task fp16-d128 --sample 1 --json --cache-dir " +
                             test::scratch_dir("technique8-cache").string(),
                         "EVO_ROOT=" + root.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto recs = records_of(r.out);
  ASSERT_EQ(recs.size(), 1u) << r.out;
  EXPECT_EQ(recs[0]["params"]["CLUSTER"], 1) << recs[0].dump();
  EXPECT_EQ(recs[0]["outcome"], "technique") << recs[0].dump();
  EXPECT_NE(recs[0]["reason"].get<std::string>().find("requires MULTICAST >= 1 in the SASS, found 0"),
            std::string::npos)
      << recs[0]["reason"];
  // Everything else stage 8 asks for is there: only the multicast is missing.
  const json& t = recs[0]["compile"]["technique"];
  EXPECT_GT(t["HGMMA"].get<long>(), 0);
  EXPECT_GT(t["UTMALDG"].get<long>(), 0);
  EXPECT_GE(t["USETMAXREG"].get<long>(), 2);
  EXPECT_EQ(t["MULTICAST"].get<long>(), 0);
  EXPECT_EQ(recs[0]["compile"]["launch"]["cluster_x"], 1);
}

TEST(Technique, Stage8KernelShowsMulticastAndExportsAClusterLaunch) {
  auto r = test::run_evo("compile --stage 8 --task fp16-d128,bf16-d64-causal --sample 1 --json --cache-dir " +
                         test::nvrtc_cache("technique8-real-cache").string());
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 3000);
  auto recs = records_of(r.out);
  ASSERT_EQ(recs.size(), 2u);
  for (const auto& j : recs) {
    ASSERT_EQ(j["outcome"], "ok") << j.dump();
    const json& t = j["compile"]["technique"];
    EXPECT_GT(t["HGMMA"].get<long>(), 0);
    EXPECT_GT(t["MULTICAST"].get<long>(), 0) << "K and V halves go to both CTAs of the cluster";
    EXPECT_GT(t["SYNCS"].get<long>(), 0);
    EXPECT_GE(t["USETMAXREG"].get<long>(), 2);
    EXPECT_EQ(j["compile"]["launch"]["cluster_x"], 2);
    EXPECT_EQ(j["compile"]["launch"]["persistent"], 1);
    EXPECT_EQ(j["compile"]["resources"]["spill_stores"], 0);
  }
}

}  // namespace
}  // namespace evo
