// The verdict rules (gates/verdict.h) without a GPU: fake evidence in, verdict out.
#include "gates/verdict.h"

#include <gtest/gtest.h>

#include "policy/config.h"
#include "support/test_support.h"

namespace evo {
namespace {

OutputCheck passing() {
  OutputCheck oc;
  oc.pass = true;
  return oc;
}

TEST(Verdict, CaseRulesInTheirOrder) {
  EXPECT_FALSE(case_verdict({"small/0", true, true, passing()}));
  auto v = case_verdict({"small/0", false, false, passing()});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->outcome, Outcome::correctness);
  EXPECT_EQ(v->reason, "small/0: wrote outside its tensors (guard bytes or O's stride gaps changed)");
  v = case_verdict({"small/1", true, false, passing()});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "small/1: modified its inputs");
  OutputCheck wrong;
  wrong.reason = "12 elements never written";
  v = case_verdict({"timing, fresh inputs b0", true, true, wrong});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "timing, fresh inputs b0: 12 elements never written");
}

// Hacker round 7: a split kernel that leaves a tile counter nonzero keeps state between calls
// (split_counter_keeps_launches.cu). Below a guard-band write, above modified inputs and output.
TEST(Verdict, NonzeroTileCountersAreAFailureWithTheirOwnReason) {
  EXPECT_FALSE(case_verdict({"small/0", true, true, passing(), true}));
  OutputCheck wrong;
  wrong.reason = "3 elements off";
  auto v = case_verdict({"small/2", true, false, wrong, false});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->outcome, Outcome::correctness);
  EXPECT_EQ(v->reason, "small/2: left its split workspace's tile counters nonzero (state kept between calls)");
  v = case_verdict({"small/2", false, true, passing(), false});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "small/2: wrote outside its tensors (guard bytes or O's stride gaps changed)");
}

// Hacker round 8: a repeat launch over the workspace its first launch left must leave it so.
TEST(Verdict, AWorkspaceChangedByARepeatLaunchIsAFailureWithItsOwnReason) {
  EXPECT_FALSE(case_verdict({"small/0", true, true, passing(), true, true}));
  OutputCheck wrong;
  wrong.reason = "3 elements off";
  auto v = case_verdict({"small/2", true, false, wrong, true, false});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->outcome, Outcome::correctness);
  EXPECT_EQ(v->reason,
            "small/2: changed its split workspace on a repeat launch over what its last launch left (state kept "
            "between calls)");
  v = case_verdict({"small/2", true, true, passing(), false, false});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->reason, "small/2: left its split workspace's tile counters nonzero (state kept between calls)");
}

TEST(Verdict, FirstFailureWins) {
  std::optional<Verdict> v;
  record_failure(v, Outcome::correctness, "first");
  record_failure(v, Outcome::nondeterministic, "second");
  EXPECT_EQ(v->reason, "first");
  EXPECT_FALSE(determinism_verdict(true));
  EXPECT_EQ(determinism_verdict(false)->outcome, Outcome::nondeterministic);
}

TEST(Verdict, WarningsUseThePolicy) {
  VerdictPolicy p;
  EXPECT_FALSE(clock_drop_warning("b0", 1980, 1800, p));
  EXPECT_EQ(*clock_drop_warning("b0", 1980, 1700, p), "SM clock fell from 1980 to 1700 MHz during b0");
  EXPECT_FALSE(noisy_timing_warning("b0", 0.02, p));
  EXPECT_EQ(*noisy_timing_warning("b0", 0.031, p), "noisy timing on b0: rse 3.1 %");
}

TEST(Verdict, SettlingAfterTheWorkerEnds) {
  const Verdict crash{Outcome::crash, "worker killed by signal 11"};
  const Verdict wrong{Outcome::correctness, "small/0: modified its inputs"};
  EXPECT_EQ(settle_verdict(wrong, crash, 0, 2)->outcome, Outcome::crash);  // a crash outranks the gate
  EXPECT_EQ(settle_verdict(wrong, std::nullopt, 0, 2)->outcome, Outcome::correctness);
  EXPECT_EQ(settle_verdict(std::nullopt, std::nullopt, 1, 2)->outcome, Outcome::runtime);  // ended early
  EXPECT_FALSE(settle_verdict(std::nullopt, std::nullopt, 2, 2));
  EXPECT_FALSE(correctness_gate_passed(wrong));
  EXPECT_TRUE(correctness_gate_passed(crash));
  EXPECT_TRUE(correctness_gate_passed(std::nullopt));
}

TEST(Verdict, ThresholdsComeFromGatesJson) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  EXPECT_EQ(g.verdict.repeat_z, 4.0);
  EXPECT_EQ(g.verdict.repeat_min_fraction, 0.05);
  EXPECT_EQ(g.verdict.repeat_slack_us, 1.0);
  const std::string text = test::read_text(test::source_root() / "gates" / "gates.json");
  auto j = nlohmann::json::parse(text);
  j["verdict"]["repeat_slack_us"] = 5;
  EXPECT_EQ(parse_gates_config(j.dump(), "test").verdict.repeat_slack_us, 5.0);
  j["verdict"]["repeat_min_fraction"] = 1.5;  // a gain of 150 %: never
  EXPECT_THROW(parse_gates_config(j.dump(), "test"), std::exception);
  j["verdict"]["repeat_min_fraction"] = 0.05;
  j["verdict"]["noisy_rse"] = "high";
  EXPECT_THROW(parse_gates_config(j.dump(), "test"), std::exception);
  j.erase("verdict");  // an older gates.json: the defaults
  EXPECT_EQ(parse_gates_config(j.dump(), "test").verdict.noisy_rse, 0.02);
}

// The gate stops at the first failed case where gates.json says so: on in the repository's file
// (since the H200 run of 2026-12-02), off where set off and in a file without the field, and a
// value that is not a bool is refused with the field's name.
TEST(Verdict, StopAtFirstFailureIsAGatesJsonSwitchOnInTheRepository) {
  EXPECT_TRUE(load_gates_config(test::source_root() / "gates" / "gates.json").verdict.stop_at_first_failure);
  auto j = nlohmann::json::parse(test::read_text(test::source_root() / "gates" / "gates.json"));
  j["verdict"]["stop_at_first_failure"] = false;
  EXPECT_FALSE(parse_gates_config(j.dump(), "test").verdict.stop_at_first_failure);
  j["verdict"]["stop_at_first_failure"] = "yes";
  try {
    parse_gates_config(j.dump(), "test");
    ADD_FAILURE() << "a string for stop_at_first_failure must be refused";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("stop_at_first_failure"), std::string::npos) << e.what();
  }
  j["verdict"].erase("stop_at_first_failure");
  EXPECT_FALSE(parse_gates_config(j.dump(), "test").verdict.stop_at_first_failure);
}

}  // namespace
}  // namespace evo
