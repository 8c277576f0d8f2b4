// The opt-in `huge` set (gates.json): a tensor above 2^31 elements, checked on the GPU (inputs
// hashed, reference computed and compared in the worker; run/large_cases.h) under a watchdog
// sized by the case's work. The adversarial suite's honest pattern must pass it, and
// tests/adversarial/offsets_32bit.cu, right on every smaller tensor, must be rejected by it,
// with the huge case named in the reason.
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

const fs::path kAdversarialDir = source_root() / "tests" / "adversarial";
constexpr double kHugeDeviceBytes = 40e9;  // 4 buffers of 4.3 GB, the FP32 reference (8.6 GB), room

// Device 0's memory, or 0 when the driver cannot say.
double device_memory_bytes() {
  const CudaDriver& cu = cuda_driver();
  CUdevice dev = 0;
  size_t bytes = 0;
  if (cu.cuInit(0) != CUDA_SUCCESS || cu.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cu.cuDeviceTotalMem(&bytes, dev) != CUDA_SUCCESS)
    return 0;
  return double(bytes);
}

const json* huge_check(const json& record) {
  for (const auto& ch : record["gates"]["correctness"]["checks"])
    if (ch.value("case", "").rfind("huge/", 0) == 0) return &ch;
  return nullptr;
}

TEST(HugeSet, HonestKernelPassesAndThirtyTwoBitOffsetsAreRejected) {
  EVO_REQUIRE_GPU();
  if (device_memory_bytes() < kHugeDeviceBytes)
    GTEST_SKIP() << fmt::format("the huge set needs {:.0f} GB of device memory; device 0 has {:.1f} GB",
                                kHugeDeviceBytes / 1e9, device_memory_bytes() / 1e9);
  const json expected = json::parse(read_text(kAdversarialDir / "expected.json")).at("offsets_32bit.cu");
  std::vector<std::string> verdicts{expected.at("verdict").get<std::string>()};
  for (const auto& v : expected.value("also", json::array())) verdicts.push_back(v);
  const fs::path root = make_repo(
      "huge",
      {{"variants/0-adversarial/control_scalar_pattern.cu", read_text(kAdversarialDir / "control_scalar_pattern.cu")},
       {"variants/0-adversarial/offsets_32bit.cu", read_text(kAdversarialDir / "offsets_32bit.cu")}});
  set_deep_gate(root, false);  // the huge set alone decides here
  const std::string q = "'" + root.string() + "'";
  const CliResult run = run_evo(
      "run --stage 0 --task fp16-d64 --budget 2 --shapes huge --bench mission --seeds 0 --rng-seed 1 --gate-seed 2025 "
      "--results-dir " +
          q + "/results --populations-dir " + q + "/populations --cache-dir " + q + "/cache",
      "cd " + q + " && EVO_ROOT=" + q);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const RecordSet rs = read_records(root / "results");
  ASSERT_TRUE(rs.problems.empty()) << rs.problems.front();
  std::map<std::string, json> by_variant;
  for (const auto& r : rs.records) by_variant[r["variant"].get<std::string>()] = r;
  ASSERT_EQ(by_variant.count("0-adversarial/control_scalar_pattern"), 1u) << run.out;
  ASSERT_EQ(by_variant.count("0-adversarial/offsets_32bit"), 1u) << run.out;

  const json& honest = by_variant["0-adversarial/control_scalar_pattern"];
  EXPECT_EQ(honest["outcome"], "ok") << honest["reason"];
  const json* hc = huge_check(honest);
  ASSERT_NE(hc, nullptr) << "no huge case in the honest kernel's record";
  EXPECT_TRUE((*hc)["pass"].get<bool>()) << hc->dump();
  ASSERT_TRUE(hc->contains("device_check")) << "the huge case must be checked on the GPU: " << hc->dump();
  const json& dc = (*hc)["device_check"];
  EXPECT_GT(dc["n"].get<double>(), 2147483648.0) << "the huge case must have a tensor above 2^31 elements";
  EXPECT_EQ(dc["unwritten"], 0);

  const json& tricked = by_variant["0-adversarial/offsets_32bit"];
  const std::string got = tricked["outcome"], reason = tricked["reason"];
  EXPECT_NE(std::find(verdicts.begin(), verdicts.end(), got), verdicts.end())
      << "offsets_32bit: got " << got << " (" << reason << ")";
  EXPECT_NE(reason.find("huge/"), std::string::npos) << "the reason must name the huge case: " << reason;
  for (const auto& ch : tricked["gates"]["correctness"]["checks"]) {
    if (ch.value("case", "").rfind("huge/", 0) == 0) continue;
    EXPECT_TRUE(ch["pass"].get<bool>()) << "offsets_32bit is right below 2^31 elements, yet failed " << ch.dump();
  }

  const std::string figure = fmt::format(
      "huge case {}: honest kernel ok, {:.2f} s in the worker after the fill ({:.2f} s reference and compare), "
      "{:.1f} GB device memory at the peak, GPU-seconds {:.2f} for the whole candidate; offsets_32bit: {} ({})",
      (*hc)["shape"].get<std::string>(), dc["seconds"].get<double>(), dc["reference_s"].get<double>(),
      dc["device_bytes"].get<double>() / 1e9, honest["gpu_seconds"].get<double>(), got, reason);
  RecordProperty("figure", figure);
  std::cout << figure << "\n";
}

}  // namespace
}  // namespace evo::test
