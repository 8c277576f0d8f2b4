// The EVO_CONSTRAINT reader (search/constraint_rules.h) against NVRTC itself: on a spread of the
// stage-7 and stage-8 domains, the parser says `violated` exactly where the compiler stops at
// an EVO_CONSTRAINT, at the same line (and the FP8 stage 7, whose rules depend on the head dim).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/variant.h"
#include "search/search_space.h"
#include "support/test_support.h"

namespace evo::test {
namespace {

using nlohmann::json;

TEST(ConstraintRulesNvrtc, ParserAndCompilerAgreeOnStages7And8AndFp8) {
  const auto stages = discover_stages(source_root());
  const auto cache = nvrtc_cache("rules-nvrtc");
  size_t violated = 0, feasible = 0;
  for (const char* what : {"--stage 7 --task fp16-d128", "--stage 8 --task fp16-d128", "--stage 7 --task fp8-d128"}) {
    const auto r =
        run_evo(std::string("compile ") + what + " --sample 12 --arch sm_90a --json --cache-dir " + shell_quote(cache));
    ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] != '{') continue;
      const json j = json::parse(line);
      if (j["outcome"] == "unsupported") continue;  // a variant without this task (the fp8 one)
      const Stage& s = find_stage(stages, j["stage"].get<int>());
      const Variant* v = nullptr;
      for (const auto& x : s.variants)
        if (x.id == j["variant"].get<std::string>()) v = &x;
      ASSERT_NE(v, nullptr) << line;
      const SearchVariant sv =
          make_search_variant(*v, v->params, parse_task(j["task"]), source_root() / "variants/common");
      ParamSet p;
      for (const auto& t : v->params) p.emplace_back(t.name, j["params"][t.name].get<long>());
      const ConstraintCheck c = sv.check(p);
      const std::string outcome = j["outcome"], reason = j["reason"];
      EXPECT_NE(c.result, RuleResult::unknown) << line;
      EXPECT_EQ(outcome == "constraints", c.result == RuleResult::violated) << outcome << " " << reason << "\n" << line;
      if (c.result == RuleResult::violated) {
        ++violated;
        EXPECT_NE(reason.find("(" + std::to_string(c.rule->line) + "): " + c.rule->message), std::string::npos)
            << reason << " vs line " << c.rule->line;
      } else {
        ++feasible;
      }
    }
  }
  EXPECT_GT(violated, 10u);
  EXPECT_GT(feasible, 10u);
}

}  // namespace
}  // namespace evo::test
