// The adversarial fixtures compile for what the GPU suites run them on: sm_90a (the H200), each at
// its suite's task (expected.json "task": fp16-d64 for most, the causal, bf16 and fp8 suites'
// own). Every fixture at every task, on sm_80 too, is the exhaustive label's
// (tests/exhaustive/adversarial_compile_all_test.cpp): that sweep took 460 s of CI's 583 s of
// tests, and every fixture at the four suites' tasks still 126 s.
#include "support/fixture_compile.h"

namespace evo::test {
namespace {

TEST(AdversarialFixtures, EveryFixtureCompilesForTheTasksTheGpuSuitesRun) {
  check_fixtures_compile_at_their_tasks("sm_90a");
}

}  // namespace
}  // namespace evo::test
