// core/covering_array.h: every pair (and every asked triple) of values a valid row can hold is
// in some row, whatever the seed; rows respect the constraint; a seed replays its rows. Coverage
// is checked by brute force over the whole space, not with the builder's own list.
#include "core/covering_array.h"

#include <gtest/gtest.h>

#include <set>

namespace evo {
namespace {

// Every complete row of a (small) space, for brute-force checks.
std::vector<CoverRow> all_rows(const std::vector<int>& sizes) {
  std::vector<CoverRow> out{CoverRow{}};
  for (int n : sizes) {
    std::vector<CoverRow> next;
    for (const auto& r : out)
      for (int v = 0; v < n; ++v) {
        next.push_back(r);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  return out;
}

// The interactions of `dims` (2 or 3 of them) that some valid row of the space holds and none of
// `rows` does, by brute force.
size_t missed(const CoveringRequest& r, const std::vector<CoverRow>& rows, const std::vector<int>& dims) {
  std::set<std::vector<int>> possible, seen;
  auto project = [&](const CoverRow& row) {
    std::vector<int> v;
    for (int d : dims) v.push_back(row[size_t(d)]);
    return v;
  };
  for (const auto& row : all_rows(r.sizes))
    if (!r.completable || r.completable(row)) possible.insert(project(row));
  for (const auto& row : rows) seen.insert(project(row));
  size_t n = 0;
  for (const auto& p : possible) n += !seen.count(p);
  return n;
}

void expect_covering(const CoveringRequest& r, const std::vector<CoverRow>& rows, const std::string& what) {
  for (int a = 0; a < int(r.sizes.size()); ++a)
    for (int b = a + 1; b < int(r.sizes.size()); ++b)
      EXPECT_EQ(missed(r, rows, {a, b}), 0u) << what << ": pairs of dims " << a << ", " << b;
  for (const auto& t : r.triples)
    EXPECT_EQ(missed(r, rows, {t[0], t[1], t[2]}), 0u) << what << ": triple " << t[0] << t[1] << t[2];
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), r.sizes.size());
    EXPECT_TRUE(!r.completable || r.completable(row)) << what << ": a row breaks the constraint";
  }
  EXPECT_TRUE(missing_interactions(r, rows).empty()) << what;
}

TEST(CoveringArray, EveryPairOfEveryTwoDimensionsForManySeeds) {
  // Dimensions of equal sizes are what a per-dimension shuffled cycle moves in lock-step.
  CoveringRequest r;
  r.sizes = {6, 6, 5, 5, 3, 3, 2};
  for (uint64_t seed : {0ull, 1ull, 42ull, 1511791795ull, ~0ull}) {
    const auto rows = build_covering_array(r, seed);
    expect_covering(r, rows, "seed " + std::to_string(seed));
    EXPECT_GE(rows.size(), 36u);  // 6 x 6 pairs need 36 rows at least
    EXPECT_LE(rows.size(), 48u) << "greedy should stay near the lower bound";
  }
}

TEST(CoveringArray, TriplesAndConstraints) {
  CoveringRequest r;
  r.sizes = {3, 3, 3, 4, 2};
  r.triples = {{0, 1, 2}};
  // No row with dim 0 = 0 and dim 3 = 3, nor dim 1 = 2 with dim 2 = 2 and dim 4 = 1.
  r.completable = [](const CoverRow& p) {
    if (p[0] == 0 && p[3] == 3) return false;
    if (p[1] == 2 && p[2] == 2 && p[4] == 1) return false;
    return true;
  };
  for (uint64_t seed : {3ull, 7ull, 2024ull}) {
    const auto rows = build_covering_array(r, seed);
    expect_covering(r, rows, "seed " + std::to_string(seed));
    EXPECT_GE(rows.size(), 27u);
  }
  // The required list leaves out what no valid row can hold.
  for (const auto& t : required_interactions(r))
    EXPECT_FALSE(t.n == 2 && t.dims[0] == 0 && t.dims[1] == 3 && t.values[0] == 0 && t.values[1] == 3) << t.text();
}

TEST(CoveringArray, ASeedReplaysItsRowsAndAnotherSeedBuildsOthers) {
  CoveringRequest r;
  r.sizes = {5, 3, 5, 5, 3, 6, 6};
  EXPECT_EQ(build_covering_array(r, 11), build_covering_array(r, 11));
  EXPECT_NE(build_covering_array(r, 11), build_covering_array(r, 12));
  SplitMix a{5}, b{5};
  EXPECT_EQ(random_row(r, a), random_row(r, b));
}

TEST(CoveringArray, MissingInteractionsAreNamed) {
  CoveringRequest r;
  r.sizes = {2, 2};
  const auto missing = missing_interactions(r, {{0, 0}, {1, 1}});
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing.front().text(), "dim 0 = 0, dim 1 = 1");
}

}  // namespace
}  // namespace evo
