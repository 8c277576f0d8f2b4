// Every adversarial fixture at every task it declares, for sm_80 and sm_90a (label exhaustive,
// which CI does not run): after an edit to evo_attn.cuh, `ctest --test-dir build -L exhaustive`.
#include "support/fixture_compile.h"

namespace evo::test {
namespace {

TEST(AdversarialFixturesAllTasks, EveryFixtureCompilesForEveryTaskItDeclares) {
  check_fixtures_compile({"sm_80", "sm_90a"}, "fp16-d64,fp16-d128,bf16-d128,fp16-d64-causal,fp8-d64,fp8-d128-causal");
}

}  // namespace
}  // namespace evo::test
