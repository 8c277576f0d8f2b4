// `evo gate` re-measures elites under the sampled gate too (run/remeasure.h): a seed is drawn
// per run unless --gate-seed gives one, and a bad seed is one line and exit 1 before any work
// (on a machine without a GPU it would otherwise fail later, with exit 2).
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace evo::test {
namespace {

TEST(GateSampled, ABadGateSeedIsOneLineAndExit1BeforeAnyWork) {
  const std::string baseline = (source_root() / "tests" / "fixtures" / "gate" / "baseline.json").string();
  for (const char* bad : {"abc", "4294967296", "1e3"}) {
    const CliResult r = run_evo(std::string("gate --baseline '") + baseline + "' --gate-seed " + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("--gate-seed '") + bad + "': use a decimal integer from 0 to 4294967295"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
  }
}

}  // namespace
}  // namespace evo::test
