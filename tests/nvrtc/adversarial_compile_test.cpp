// The adversarial fixtures compile for what the GPU suites run them on: sm_90a (the H200), at the
// tasks of tests/gpu/ (the fp16-d64 suites, fp8-d64 of fp8_test.cpp) and bf16-d128 (the task of
// round 2's bf16_v_through_fp16, for when its hole is closed). Every
// task on sm_80 too is the exhaustive label's (tests/exhaustive/adversarial_compile_all_test.cpp):
// the sweep took 460 s of CI's 583 s of tests.
#include "support/fixture_compile.h"

namespace evo::test {
namespace {

TEST(AdversarialFixtures, EveryFixtureCompilesForTheTasksTheGpuSuitesRun) {
  check_fixtures_compile({"sm_90a"}, "fp16-d64,fp16-d64-causal,bf16-d128,fp8-d64");
}

}  // namespace
}  // namespace evo::test
