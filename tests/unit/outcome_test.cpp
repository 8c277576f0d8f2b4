// core/outcome: every outcome has one spelling in records and reads back from it; anything
// else is not an outcome (the record reader rejects the line).
#include "core/outcome.h"

#include <gtest/gtest.h>

#include <set>

namespace evo {
namespace {

TEST(Outcome, EverySpellingReadsBackAndIsUnique) {
  std::set<std::string> seen;
  for (int i = 0; i <= int(Outcome::technique); ++i) {
    const Outcome o = Outcome(i);
    const std::string name(to_string(o));
    EXPECT_TRUE(seen.insert(name).second) << name << " spelled twice";
    EXPECT_EQ(outcome_from_string(name), o) << name;
  }
  EXPECT_EQ(seen.size(), 13u);
  EXPECT_TRUE(seen.count("nondeterministic"));
}

TEST(Outcome, UnknownSpellingsAreNotOutcomes) {
  for (const char* s : {"", "OK", "passed", "ok ", "crash\n", "timeouts"}) EXPECT_FALSE(outcome_from_string(s)) << s;
  EXPECT_TRUE(Verdict{}.ok());
  EXPECT_FALSE((Verdict{Outcome::crash, "worker died"}).ok());
}

}  // namespace
}  // namespace evo
