// The GPU-free parts of `evo run --sanitize`: which tools a kernel gets, what a tool's log
// says, and a run that cannot sanitize stopping before any work instead of admitting elites
// unchecked. tests/gpu/sanitizer_test.cpp runs the tools themselves.
#include "run/sanitizer.h"

#include <gtest/gtest.h>

#include <set>

#include "core/errors.h"
#include "gpu/case_layout.h"
#include "run/plan.h"

#include "support/test_support.h"

namespace evo::test {
namespace {

TEST(SanitizerTools, SharedMemoryAddsRacecheckAndBarriersAddSynccheck) {
  PtxasResources r;
  LaunchGeometry g{};
  EXPECT_EQ(sanitizer_tools(r, g), (std::vector<std::string>{"memcheck", "initcheck"}));
  r.barriers = 1;
  EXPECT_EQ(sanitizer_tools(r, g), (std::vector<std::string>{"memcheck", "initcheck", "synccheck"}));
  r.barriers = 0;
  g.smem_bytes = 49152;  // dynamic only
  EXPECT_EQ(sanitizer_tools(r, g), (std::vector<std::string>{"memcheck", "initcheck", "racecheck", "synccheck"}));
  g.smem_bytes = 0;
  r.static_smem = 512;  // static only
  EXPECT_EQ(sanitizer_tools(r, g), (std::vector<std::string>{"memcheck", "initcheck", "racecheck", "synccheck"}));
}

TEST(SanitizerLog, CleanRunHasASummaryAndNoErrors) {
  const auto f = parse_sanitizer_log("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_TRUE(f.summary_seen);
  EXPECT_EQ(f.errors, 0);
  EXPECT_EQ(f.first, "");
}

TEST(SanitizerLog, MemcheckReportGivesTotalAndWhere) {
  // From the H200 run of tests/adversarial/sanitizer/oob_read_masked.cu (host frames cut).
  const auto f = parse_sanitizer_log(
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ read of size 4 bytes\n"
      "=========     at __half2::__half2(const __half2&)+0x9b0 in cuda_fp16.h:5122\n"
      "=========     by thread (97,0,0) in block (3,1,0)\n"
      "=========     Access to 0x7f3989a02280 is out of bounds\n"
      "=========     and is 1 bytes after the nearest allocation at 0x7f3989a01200 of size 4,224 bytes\n"
      "=========         Device Frame: <unnamed>::attend_row(const EvoAttnParams &, int, int, int, float *, int, "
      "int)+0x9b0 in oob_read_masked.cu:76\n"
      "========= \n"
      "========= ERROR SUMMARY: 107 errors\n"
      "========= ERROR SUMMARY: 87 errors were not printed. Use --print-limit option to adjust the number of printed "
      "errors\n");
  EXPECT_TRUE(f.summary_seen);
  EXPECT_EQ(f.errors, 107);
  EXPECT_EQ(f.reports(), 107);
  EXPECT_EQ(f.summary, "ERROR SUMMARY: 107 errors");
  EXPECT_EQ(f.first,
            "Invalid __global__ read of size 4 bytes — at __half2::__half2(const __half2&)+0x9b0 in cuda_fp16.h:5122");
}

TEST(SanitizerLog, RacecheckWarningsCountAsReports) {
  // The head of the report racecheck gave for stage 3's mma_pv before its epilogue __syncwarp
  // (a record dropped from lab/; the commit that added it: 560f700): intra-warp hazards are
  // "Warning", and they fail the candidate too.
  const auto f = parse_sanitizer_log(
      "========= COMPUTE-SANITIZER\n"
      "========= Warning: Race reported between Read access at <unnamed>::ldsm_x4(unsigned int, unsigned int &, "
      "unsigned int &, unsigned int &, unsigned int &)+0x2490 in mma_pv.cu:75\n"
      "=========     and Write access at evo_attn_fwd+0x4bd0 in mma_pv.cu:350 [1984 hazards]\n"
      "=========     and Write access at evo_attn_fwd+0x4c00 in mma_pv.cu:350 [1984 hazards]\n"
      "========= \n"
      "========= RACECHECK SUMMARY: 8 hazards displayed (0 errors, 8 warnings)\n");
  EXPECT_TRUE(f.summary_seen);
  EXPECT_EQ(f.errors, 0);
  EXPECT_EQ(f.hazards, 8);
  EXPECT_EQ(f.reports(), 8);
  EXPECT_EQ(f.summary, "RACECHECK SUMMARY: 8 hazards displayed (0 errors, 8 warnings)");
  EXPECT_NE(f.first.find("Warning: Race reported between Read access at"), std::string::npos) << f.first;
  EXPECT_NE(f.first.find("— and Write access at evo_attn_fwd+0x4bd0 in mma_pv.cu:350"), std::string::npos) << f.first;
  const auto clean = parse_sanitizer_log("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n");
  EXPECT_TRUE(clean.summary_seen);
  EXPECT_EQ(clean.reports(), 0);
}

TEST(SanitizerLog, NoSummaryIsNotAPass) {
  // A tool that died mid-run leaves no summary: the caller must not read that as clean.
  const auto f =
      parse_sanitizer_log("========= COMPUTE-SANITIZER\n========= Internal Sanitizer Error: out of memory\n");
  EXPECT_FALSE(f.summary_seen);
  EXPECT_EQ(f.first, "Internal Sanitizer Error: out of memory");
  EXPECT_FALSE(parse_sanitizer_log("").summary_seen);
  EXPECT_FALSE(parse_sanitizer_log("ERROR SUMMARY: 0 errors printed by the kernel, not the tool\n").summary_seen);
}

TEST(SanitizerCli, AMissingSanitizerStopsTheRunBeforeAnyWork) {
  const std::string missing = (scratch_dir("no-sanitizer") / "compute-sanitizer").string();
  const CliResult r = run_evo("run --stage 0 --sanitize --results-dir " + (scratch_dir("san-results")).string(),
                              "EVO_COMPUTE_SANITIZER=" + missing);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("EVO_COMPUTE_SANITIZER=" + missing + " is not an executable file"), std::string::npos) << r.out;
  // Nothing was compiled or recorded: the message is the whole output.
  EXPECT_EQ(r.out.find("constraints"), std::string::npos) << r.out;
}

// Issue 29: the small set alone never shows memcheck a KV cache with capacity, padding between
// rows or a BSHD view, where an over-read lands in finite padding and passes every output check.
// A sanitized plan with the deep tier adds the smallest covering-array case of each layout and
// padding kind, within the element cap, the same ones for the same seed.
TEST(SanitizerPlan, ASanitizedRunAlsoReadsTheDeepTiersLayouts) {
  const GatesConfig g = load_gates_config(source_root() / "gates" / "gates.json");
  const Task t = parse_task("bf16-d128");
  auto deep_ids = [&](const GatesConfig& gates, bool sanitize, std::optional<uint32_t> seed) {
    std::vector<std::string> out;
    const EvalPlan p = make_plan(gates, {t, gates.gate_sets, gates.benchmark_sets, gates.seeds, sanitize, seed, true});
    for (const CaseSpec& c : p.sanitize_cases) {
      if (c.id.rfind("sanitize/deep/", 0) != 0) continue;
      const CaseLayout l = case_layout(c.shape, c.layout);
      EXPECT_LE(l.q.buffer_elements + l.k.buffer_elements + l.v.buffer_elements + l.o.buffer_elements,
                gates.sanitizer.deep_max_elements)
          << c.id;
      EXPECT_FALSE(c.device_check.on) << c.id;
      out.push_back(c.id + "|" + c.layout + "|" + c.junk);
    }
    return out;
  };
  const std::vector<std::string> ids = deep_ids(g, true, 42u);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_LE(ids.size(), size_t(g.sanitizer.deep_cases));
  std::set<std::string> kinds;
  bool strided = false;
  for (const auto& id : ids) {
    const std::string kind = id.substr(id.find('|'));
    EXPECT_TRUE(kinds.insert(kind).second) << "one case per layout and padding kind: " << id;
    strided |= kind.rfind("||", 0) != 0;  // a layout other than the shape's own
  }
  EXPECT_TRUE(strided) << "at least one case with the op's strides or views";
  EXPECT_EQ(deep_ids(g, true, 42u), ids) << "the seed replays them";
  EXPECT_TRUE(deep_ids(g, false, 42u).empty()) << "only a sanitized run";
  EXPECT_TRUE(deep_ids(g, true, std::nullopt).empty()) << "no gate seed, no deep cases";
  GatesConfig off = g;
  off.deep_gate.sanitizer = false;
  EXPECT_TRUE(deep_ids(off, true, 42u).empty());
  // Out-of-range settings are usage errors naming the field.
  const std::string text = read_text(source_root() / "gates" / "gates.json");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"deep_cases\": 6", "\"deep_cases\": -1"},
           {"\"deep_max_elements\": 4194304", "\"deep_max_elements\": 0"}}) {
    std::string bad = text;
    const auto at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    try {
      parse_gates_config(bad, "gates.json");
      ADD_FAILURE() << to << " was accepted";
    } catch (const EvoError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      EXPECT_NE(std::string(e.what()).find(from.substr(1, from.find('"', 1) - 1)), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace evo::test
