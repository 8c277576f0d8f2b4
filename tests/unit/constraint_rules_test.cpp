// The EVO_CONSTRAINT reader (search/constraint_rules.h) and the search space built on it: the
// real stage-7 domain counted, the preprocessor's corners, and undecidable rules left to the
// compiler. (tests/nvrtc/constraint_rules_nvrtc_test.cpp checks it against NVRTC itself.)
#include <gtest/gtest.h>

#include "core/variant.h"
#include "search/constraint_rules.h"
#include "search/search_space.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

ConstraintRules rules_of(const std::string& source) {
  return ConstraintRules::parse(source, [](const std::string& name) -> std::optional<std::string> {
    if (name == "hdr.h") return "#define FROM_HEADER 7\n#define EVO_CONSTRAINT(c, m) static_assert((c), m)\n";
    return std::nullopt;
  });
}

RuleResult result(const ConstraintRules& r, std::map<std::string, long long> m) { return r.check(m).result; }

TEST(ConstraintRules, Stage7DomainAtBothHeadDims) {
  const auto stages = discover_stages(source_root());
  const Stage& s7 = find_stage(stages, 7);
  const Variant* v = nullptr;
  for (const auto& x : s7.variants)
    if (x.id == "7-tma-ws/tma_ws") v = &x;
  ASSERT_NE(v, nullptr);
  const auto common = source_root() / "variants" / "common";
  const SearchVariant d128 = make_search_variant(*v, v->params, parse_task("fp16-d128"), common);
  EXPECT_EQ(d128.rules->rules().size(), 8u);
  EXPECT_EQ(d128.configs(), 864u);
  // 864 less NCONS=3 with PINGPONG=1 (216), the register split (NCONS=3 beyond 160/32, NCONS=2 at
  // 240/40) and shared memory (BLOCK_N=128 with 4 stages, or with NCONS=3 and 3 stages).
  EXPECT_EQ(d128.feasible_configs(), 356u);
  const ConstraintCheck bad = d128.check({{"BLOCK_N", 128},
                                          {"NCONS", 2},
                                          {"STAGES", 4},
                                          {"PINGPONG", 1},
                                          {"CONS_REGS", 208},
                                          {"PROD_REGS", 40},
                                          {"TMA_STORE", 0}});
  ASSERT_EQ(bad.result, RuleResult::violated);
  EXPECT_EQ(bad.rule->line, 62) << bad.rule->message;  // SMEM_BYTES, through four macros
  const SearchVariant d64 = make_search_variant(*v, v->params, parse_task("fp16-d64"), common);
  EXPECT_EQ(d64.feasible_configs(), 432u) << "at D=64 every tile fits shared memory";
  const auto j = search_space_json(d128);
  EXPECT_EQ(j["feasible_configs"], 356);
  EXPECT_EQ(j["constraints"].size(), 8u);
  EXPECT_EQ(j["macros"]["SMEM_BYTES"], "(Q_BYTES + 2 * STAGES * KV_BYTES + 1024 + BAR_BYTES)");
  EXPECT_FALSE(j["macros"].contains("BLOCK_N")) << "a tunable is set by the params, not a macro";
  EXPECT_FALSE(j["macros"].contains("NEG_INF")) << "only what the rules use";
}

TEST(ConstraintRules, MacrosConditionalsAndMultiLineRules) {
  const auto r = rules_of(R"src(/*evo {"summary": "EVO_CONSTRAINT(0, \"in a comment\")"} */
#include "hdr.h"
#ifndef A
#define A 4
#endif
#define TWICE (A * 2)
#if TWICE > 10
#define BIG 1
#else
#define BIG 0
#endif
// EVO_CONSTRAINT(0, "a line comment");
EVO_CONSTRAINT(TWICE <= 16 &&
                   BIG == (A > 5),
               "A at most 8" " (twice at most 16)");
#if 0
EVO_CONSTRAINT(0, "never compiled");
#endif
EVO_CONSTRAINT(FROM_HEADER == 7, "the header's macros count");
)src");
  ASSERT_EQ(r.rules().size(), 3u);
  EXPECT_EQ(r.rules()[0].condition, "TWICE <= 16 && BIG == (A > 5)");
  EXPECT_EQ(r.rules()[0].message, "A at most 8 (twice at most 16)");
  EXPECT_EQ(r.rules()[0].line, 13);
  EXPECT_EQ(result(r, {}), RuleResult::holds) << "A defaults to 4";
  EXPECT_EQ(result(r, {{"A", 8}}), RuleResult::holds);
  EXPECT_EQ(result(r, {{"A", 9}}), RuleResult::violated);
  EXPECT_EQ(r.check({{"A", 9}}).rule->message, "A at most 8 (twice at most 16)");
}

TEST(ConstraintRules, WhatItCannotDecideIsUnknownNeverViolated) {
  const auto r = rules_of(R"(
#define F(x) (x * 2)
EVO_CONSTRAINT(F(A) < 8, "function-like macro");
EVO_CONSTRAINT(kConstexpr > 0, "a name only the compiler knows");
EVO_CONSTRAINT(A / (A - A) == 1 || 0, "division by zero");
#ifdef __CUDA_ARCH__
EVO_CONSTRAINT(0, "inside a region the compiler decides");
#endif
)");
  ASSERT_EQ(r.rules().size(), 4u);
  const ConstraintCheck c = r.check({{"A", 3}});
  EXPECT_EQ(c.result, RuleResult::unknown);
  EXPECT_EQ(c.rule->message, "function-like macro");
  // Short circuits decide past an unknown operand.
  const auto s =
      rules_of("EVO_CONSTRAINT(A == 1 || unknown_name, \"m\");\nEVO_CONSTRAINT(A != 2 && unknown_name, \"n\");\n");
  EXPECT_EQ(result(s, {{"A", 1}}), RuleResult::unknown) << "the second rule is undecided at A=1";
  EXPECT_EQ(result(s, {{"A", 2}}), RuleResult::violated) << "A=2: 0 && anything fails outright";
  EXPECT_EQ(s.check({{"A", 2}}).rule->message, "n") << "violated wins over an earlier undecided rule";
}

TEST(ConstraintRules, ExpressionCorners) {
  const std::map<std::string, std::optional<std::string>> m{
      {"X", "0x10"}, {"Y", "(X << 2)"}, {"Z", "Y"}, {"LOOP", "LOOP + 1"}, {"FN", std::nullopt}};
  EXPECT_EQ(evaluate_condition("Z == 64", m), 1);
  EXPECT_EQ(evaluate_condition("X > 8 ? 100 : 200", m), 100);
  EXPECT_EQ(evaluate_condition("-X + ~0 + !0", m), -16);
  EXPECT_EQ(evaluate_condition("16ll << 20", m), 16ll << 20);
  EXPECT_EQ(evaluate_condition("defined(X) + defined Y + defined(NOPE)", m), 2);
  EXPECT_EQ(evaluate_condition("LOOP", m), std::nullopt) << "a self-referencing macro";
  EXPECT_EQ(evaluate_condition("FN", m), std::nullopt);
  EXPECT_EQ(evaluate_condition("1.5 > 1", m), std::nullopt) << "floats are the compiler's";
  EXPECT_EQ(evaluate_condition("\"text\"", m), std::nullopt);
  EXPECT_EQ(evaluate_condition("(1 + 2", m), std::nullopt) << "unbalanced";
  EXPECT_EQ(evaluate_condition("1 << 99", m), std::nullopt);
  EXPECT_EQ(evaluate_condition("true && !false", m), 1);
}

TEST(SearchSpace, TheSearchedStagesHaveNoUndecidedRules) {
  // Stages 6-8 (the large tunable spaces) state every rule over macros, so the search knows each
  // exactly; a rule over a constexpr (stages 0-5 use some) stays the compiler's to decide.
  const auto stages = discover_stages(source_root());
  size_t variants = 0, undecided_elsewhere = 0;
  for (const auto& s : stages)
    for (const auto& v : s.variants)
      for (const Task& t : {parse_task("fp16-d64"), parse_task("fp16-d128"), parse_task("fp8-d128")}) {
        if (!v.supports(t)) continue;
        const SearchVariant sv = make_search_variant(v, v.params, t, source_root() / "variants" / "common");
        for (const auto& p : sv.all()) {
          const ConstraintCheck c = sv.check(p);
          if (s.number < 6) {
            undecided_elsewhere += c.result == RuleResult::unknown;
            continue;
          }
          ASSERT_NE(c.result, RuleResult::unknown) << v.id << " " << t.name() << ": " << c.rule->condition;
        }
        variants += s.number >= 6;
      }
  EXPECT_GE(variants, 5u);
  EXPECT_GT(undecided_elsewhere, 0u)
      << "stage 0's constexpr rules: if this fails, tighten the test above to all stages";
}

TEST(SearchSpace, TheRequestCarriesTheRules) {
  const CliResult r = run_evo("context --stage 7 --task fp16-d128 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  bool found = false;
  for (const auto& sv : j["i1"]["search_space"])
    if (sv["variant"] == "7-tma-ws/tma_ws") {
      found = true;
      EXPECT_EQ(sv["configs"], 864);
      EXPECT_EQ(sv["feasible_configs"], 356);
      EXPECT_EQ(sv["constraints"].size(), 8u);
      EXPECT_TRUE(sv["macros"].contains("SMEM_BYTES")) << sv.dump();
    }
  EXPECT_TRUE(found) << r.out.substr(0, 2000);
}

}  // namespace
}  // namespace evo::test
