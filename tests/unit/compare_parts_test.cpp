// report/compare_parts: the number formats COMPARE.md and the generated doc figures share, and
// the peers' labels and order.
#include "report/compare_parts.h"

#include <gtest/gtest.h>

namespace evo {
namespace {

using namespace compare_parts;

TEST(CompareParts, TimesKeepThreeSignificantFiguresOrMore) {
  EXPECT_EQ(us_text(9.874), "9.87");
  EXPECT_EQ(us_text(11.66), "11.7");
  EXPECT_EQ(us_text(999.94), "999.9");
  EXPECT_EQ(us_text(3810.4), "3810");
  EXPECT_EQ(ratio_text(1.004), "1.00");
  EXPECT_EQ(ratio_text(10.239), "10.24");
}

TEST(CompareParts, SignedPercentHasNoNegativeZero) {
  EXPECT_EQ(signed_percent(-0.0312), "-3.1 %");
  EXPECT_EQ(signed_percent(0.175), "+17.5 %");
  EXPECT_EQ(signed_percent(-0.00001), "+0.0 %");
  EXPECT_EQ(signed_percent(0), "+0.0 %");
}

TEST(CompareParts, PeerLabelsAndOrder) {
  EXPECT_EQ(peer_label("pytorch-sdpa-flash"), "PyTorch flash");
  EXPECT_EQ(peer_label("pytorch-sdpa-cudnn"), "cuDNN");
  EXPECT_EQ(peer_label("flashinfer"), "flashinfer");
  EXPECT_LT(peer_rank("pytorch-sdpa-flash"), peer_rank("pytorch-sdpa-cudnn"));
  EXPECT_LT(peer_rank("pytorch-sdpa-cudnn"), peer_rank("pytorch-sdpa-efficient"));
  EXPECT_LT(peer_rank("pytorch-sdpa-efficient"), peer_rank("flashinfer"));
  // FlashAttention-4 (scripts/peers_fa4.py) sits beside cuDNN, before the efficient fallback.
  EXPECT_EQ(peer_label("flash-attn-4"), "FlashAttention-4");
  EXPECT_LT(peer_rank("pytorch-sdpa-cudnn"), peer_rank("flash-attn-4"));
  EXPECT_LT(peer_rank("flash-attn-4"), peer_rank("pytorch-sdpa-efficient"));
  EXPECT_EQ(params_text(json::object()), "-");
  EXPECT_EQ(params_text({{"BLOCK_N", 64}, {"STAGES", 3}}), "BLOCK_N=64 STAGES=3");
}

// Record times pair stages with their own call's peers: seconds apart must come out exact, and a
// time that does not read must say so rather than count as the epoch.
TEST(CompareParts, RecordTimesReadAsEpochSeconds) {
  EXPECT_EQ(epoch_seconds("1970-01-01T00:00:00Z"), 0);
  const auto a = epoch_seconds("2026-11-23T12:24:25Z"), b = epoch_seconds("2026-11-24T12:24:26Z");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*b - *a, 86401);
  EXPECT_FALSE(epoch_seconds("yesterday"));
  EXPECT_FALSE(epoch_seconds(""));
}

// The gates cell names the tier: the record's own deep checks, a later record's (the regate of
// what ships) with its run, or none.
TEST(CompareParts, TheGatesCellNamesTheDeepTierOrItsAbsence) {
  auto check = [](bool pass) {
    GateCheck c;
    c.pass = pass;
    c.rel_l2 = 1e-3;
    return c;
  };
  Record plain;
  plain.gates = RecordGates{};
  plain.gates->correctness = RecordGate{true, "", std::vector<GateCheck>{check(true)}, json::object()};
  EXPECT_NE(gates_summary(plain).find(", cheap tier only"), std::string::npos) << gates_summary(plain);
  Record deep = plain;
  deep.gates->deep =
      RecordGate{false, "", std::vector<GateCheck>{check(true), check(false), check(true)}, json::object()};
  EXPECT_NE(gates_summary(deep).find(", deep tier 2/3"), std::string::npos) << gates_summary(deep);
  deep.run_id = "20261128T180508Z-x";
  const std::string borrowed = gates_summary(plain, nullptr, &deep);
  EXPECT_NE(borrowed.find(", deep tier 2/3 (run 20261128T180508Z-x)"), std::string::npos) << borrowed;
}

}  // namespace
}  // namespace evo
