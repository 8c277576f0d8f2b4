// report/table: terminal tables sized by display width (UTF-8 code points, not bytes).
#include "report/table.h"

#include <gtest/gtest.h>

namespace evo {
namespace {

TEST(TextTable, ColumnsFitTheWidestCellCountingCodePoints) {
  TextTable t({"stage", "µs", "note"});
  t.add({"0", "4188", "baseline"});
  t.add({"7", "356.5", "×10.1"});
  t.add({"8"});  // short rows leave their cells empty
  EXPECT_EQ(t.render(),
            "stage  µs     note\n"
            "-----  -----  --------\n"
            "0      4188   baseline\n"
            "7      356.5  ×10.1\n"
            "8\n");
  EXPECT_FALSE(t.empty());
  EXPECT_TRUE(TextTable({"a"}).empty());
}

}  // namespace
}  // namespace evo
