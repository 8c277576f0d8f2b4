// The deep tier's long-key cases (policy/config.h DeepGateConfig::long_key_sets): on the H200
// (2026-11-30) every tma_ws_fp8 configuration summed O in its FP8 wgmma accumulator across all
// key tiles, ~13 mantissa bits, and its error on a V with large channel means grew with the key
// count (0.01 at 2k keys, 0.10 at 6.5k, 0.23 at 9k; tolerance 0.08). The cheap tier's very_long
// class is drawn in [4097, 16384], so a run whose draw stayed under ~5k keys admitted it; a
// would-be elite now meets that input over the op's longest keys in every run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "policy/config.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

namespace evo {
namespace {

using nlohmann::json;

// The most keys one query row sees in a case (the causal mask is top-left).
long long keys_seen_by_a_row(const Shape& s, bool causal) {
  return causal ? std::min<long long>(s.seq_q, s.seq_kv) : s.seq_kv;
}

TEST(LongKeys, EveryDeepPlanRunsAVOffsetOverSixteenKiloKeysOrMore) {
  const GatesConfig g = test::repo_gates();
  for (const char* name : {"fp16-d64", "bf16-d128", "fp16-d128-causal", "fp8-d64", "fp8-d128", "fp8-d128-causal"}) {
    const Task t = parse_task(name);
    const EvalPlan deep = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u, true});
    long long most = 0;
    for (const CaseSpec& c : deep.deep_cases) {
      if (c.inputs != "v_offset") continue;
      EXPECT_TRUE(c.device_check.on) << c.id;
      EXPECT_TRUE(is_deep_case(c.id)) << c.id;
      most = std::max(most, keys_seen_by_a_row(c.shape, t.causal));
    }
    EXPECT_GE(most, 16384) << name << ": no deep case puts a V offset under 16k keys or more of one row";
  }
}

TEST(LongKeys, TheSetsAndTheirInputsAreListedTogetherAndNamed) {
  json good = json::parse(test::read_text(test::source_root() / "gates" / "gates.json"));
  json no_inputs = good;
  no_inputs["deep_gate"]["long_key_inputs"] = json::array();
  EXPECT_THROW(parse_gates_config(no_inputs.dump(), "gates.json"), EvoError);
  json unknown_input = good;
  unknown_input["deep_gate"]["long_key_inputs"] = json::array({"v_offsets"});
  EXPECT_THROW(parse_gates_config(unknown_input.dump(), "gates.json"), EvoError);
  json unknown_set = good;
  unknown_set["deep_gate"]["long_key_sets"] = json::array({"long-key"});
  EXPECT_THROW(parse_gates_config(unknown_set.dump(), "gates.json"), EvoError);
  // Both empty: no long-key case, the rest of the deep tier as it was.
  json off = good;
  off["deep_gate"]["long_key_sets"] = json::array();
  off["deep_gate"]["long_key_inputs"] = json::array();
  const GatesConfig on_cfg = parse_gates_config(good.dump(), "gates.json");
  const GatesConfig off_cfg = parse_gates_config(off.dump(), "gates.json");
  const Task t = parse_task("fp8-d128");
  const auto deep = [&](const GatesConfig& g) {
    return make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u, true}).deep_cases.size();
  };
  EXPECT_EQ(deep(on_cfg), deep(off_cfg) + on_cfg.shapes(on_cfg.deep_gate.long_key_sets, t).size());
}

}  // namespace
}  // namespace evo
