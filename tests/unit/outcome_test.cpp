// core/outcome: every outcome has one spelling in records and reads back from it; anything
// else is not an outcome (the record reader rejects the line).
#include "core/outcome.h"

#include <gtest/gtest.h>

#include <set>

namespace evo {
namespace {

TEST(Outcome, EverySpellingReadsBackAndIsUnique) {
  std::set<std::string> seen;
  for (size_t i = 0; i < kOutcomeCount; ++i) {
    const Outcome o = Outcome(i);
    const std::string name(to_string(o));
    EXPECT_TRUE(seen.insert(name).second) << name << " spelled twice";
    EXPECT_EQ(outcome_from_string(name), o) << name;
  }
  EXPECT_EQ(seen.size(), 17u);
  EXPECT_TRUE(seen.count("nondeterministic"));
}

// The outcomes of the integrity check and of evo evolve's proposals that never became a
// record: spelled as the records and the evolve trace write them.
TEST(Outcome, IntegrityAndEvolveOutcomesHaveTheirSpelling) {
  EXPECT_EQ(to_string(Outcome::integrity), "integrity");
  EXPECT_EQ(to_string(Outcome::generator), "generator");
  EXPECT_EQ(to_string(Outcome::input), "input");
  EXPECT_EQ(to_string(Outcome::duplicate), "duplicate");
  EXPECT_EQ(outcome_from_string("integrity"), Outcome::integrity);
  EXPECT_EQ(outcome_from_string("duplicate"), Outcome::duplicate);
  EXPECT_EQ(to_string(Outcome(kOutcomeCount - 1)), "duplicate");  // the count reaches the last value
}

TEST(Outcome, UnknownSpellingsAreNotOutcomes) {
  for (const char* s : {"", "OK", "passed", "ok ", "crash\n", "timeouts"}) EXPECT_FALSE(outcome_from_string(s)) << s;
  EXPECT_TRUE(Verdict{}.ok());
  EXPECT_FALSE((Verdict{Outcome::crash, "worker died"}).ok());
}

}  // namespace
}  // namespace evo
