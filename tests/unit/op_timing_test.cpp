// report/op_timing: COMPARE.md's section on the exported op, from check_torch_op.py's reports.
#include "report/op_timing.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "support/test_support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

// A report as check_torch_op.py writes it, cut to what the section reads: two decode shapes (one
// with flash refused), one long shape, one shape the op refused and one it failed on.
const char* kReport = R"({
  "gpu": "NVIDIA H200", "torch": "2.11.0",
  "correctness": [{"pass": true}, {"pass": true}, {"pass": false}],
  "features": [{"check": "torch.compile", "pass": true}, {"check": "opcheck", "pass": false}],
  "timing": [
    {"task": "bf16-d128", "shape": "16x64x8x1x4096x128:bshd", "regime": "decode", "kernel": "k1",
     "op": {"median_us": 80.0, "graph_us": null}, "cudnn": {"median_us": 72.0}, "flash": {"median_us": 80.0}},
    {"task": "bf16-d128", "shape": "8x32x8x16x8192x128:bshd", "regime": "decode", "kernel": "k1",
     "op": {"median_us": 100.0, "graph_us": 90.0}, "cudnn": {"median_us": 200.0}, "flash": {}},
    {"task": "fp16-d64", "shape": "1x16x16x16384x16384x64", "regime": "long", "kernel": "k2",
     "op": {"median_us": 2000.0}, "cudnn": {"median_us": 2200.0}, "flash": {"median_us": 3000.0}},
    {"task": "fp16-d64", "shape": "1x8x8x512x512x96", "skipped": "no kernel for head dim 96"},
    {"task": "fp16-d64", "shape": "1x8x8x512x512x64", "regime": "short", "kernel": "k2", "op": {"error": "boom"}}
  ]})";

fs::path results_with(const std::string& name, const std::string& text) {
  const fs::path dir = test::scratch_dir("op-timing");
  test::write_text(dir / "op" / name, text);
  return dir;
}

TEST(OpTiming, ReadsTheChecksAndEveryTimedShape) {
  const OpTimingReport r = parse_op_timing(kReport, "x/nvidia-h200-1.json");
  EXPECT_EQ(r.file, "nvidia-h200-1.json");
  EXPECT_EQ(r.correct, 2);
  EXPECT_EQ(r.correctness_cases, 3);
  EXPECT_EQ(r.features_ok, 1);
  EXPECT_EQ(r.features, 2);
  ASSERT_EQ(r.rows.size(), 3u) << "the refused and the failed shape have no time";
  EXPECT_EQ(r.rows[1].peer_us.count("flash"), 0u) << "a peer without a median did not run";
  ASSERT_TRUE(r.rows[1].op_graph_us.has_value());
  EXPECT_DOUBLE_EQ(*r.rows[1].op_graph_us, 90.0);
  EXPECT_FALSE(r.rows[0].op_graph_us.has_value());
}

TEST(OpTiming, TheSectionGivesEachRegimesGeomeanOverThePeersShapes) {
  const std::string md = op_timing_section(results_with("nvidia-h200-1.json", kReport), "", "");
  // decode × cuDNN: sqrt(72/80 · 200/100) = sqrt(1.8) = 1.34 over 2 shapes; × flash 80/80 over 1.
  EXPECT_NE(md.find("| decode | 2 | 1.34 (2) | 1.00 (1) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| long | 1 | 1.10 (1) | 1.50 (1) |"), std::string::npos) << md;
  // all × cuDNN: (0.9 · 2 · 1.1)^(1/3) = 1.98^(1/3) = 1.26.
  EXPECT_NE(md.find("| all | 3 | 1.26 (3) |"), std::string::npos) << md;
  EXPECT_NE(md.find("Correctness: 2 of 3"), std::string::npos) << md;
  EXPECT_EQ(md.find("short |"), std::string::npos) << "a regime with no timed shape has no row";
}

TEST(OpTiming, FiltersKeepOneTaskAndOneGpusReports) {
  const fs::path dir = results_with("nvidia-h200-1.json", kReport);
  const std::string one = op_timing_section(dir, "", "fp16-d64");
  EXPECT_NE(one.find("| long | 1 |"), std::string::npos) << one;
  EXPECT_EQ(one.find("bf16-d128"), std::string::npos) << one;
  EXPECT_EQ(op_timing_section(dir, "nvidia-b200", ""), "");
  EXPECT_EQ(op_timing_section(dir, "", "bf16-d64"), "") << "no row of the task: no section";
}

TEST(OpTiming, AFileThatIsNoReportIsAUsageErrorNamingIt) {
  try {
    op_timing_section(results_with("nvidia-h200-bad.json", R"({"timing": []})"), "", "");
    FAIL() << "a report without correctness and features must be refused";
  } catch (const EvoError& e) {
    EXPECT_NE(std::string(e.what()).find("nvidia-h200-bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("correctness"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_op_timing(R"({"correctness": [], "features": [], "timing": [{"op": {"median_us": 1}}]})", "f"),
               EvoError);
}

}  // namespace
}  // namespace evo
