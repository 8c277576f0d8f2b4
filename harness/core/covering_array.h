// Covering arrays with constraints: a few rows (one value index per dimension) such that every
// pair of values of every two dimensions, and every triple of values of the triples of
// dimensions asked for, appears in some row, unless no valid row can hold it. Built greedily
// (AETG-style: each row starts from an interaction not yet covered, then takes, dimension by
// dimension in a shuffled order, the value that covers the most interactions still missing),
// deterministically from a seed. The gate draws its sampled cases from such rows
// (harness/run/sampler.cpp), so dimensions never move in lock-step and more rows never repeat
// pairs a run has already seen.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/splitmix.h"

namespace evo {

// One value index per dimension; -1 is "not chosen yet" in a partial row.
using CoverRow = std::vector<int>;

struct CoveringRequest {
  std::vector<int> sizes;                   // values per dimension, each >= 1
  std::vector<std::array<int, 3>> triples;  // dimension triples covered at strength 3 (all pairs always are)
  // Whether some complete valid row agrees with `partial` where it is chosen. Must be exact: a
  // row the builder starts is finished by it. Empty: every row is valid.
  std::function<bool(const CoverRow& partial)> completable;
};

// An interaction: values of two or three dimensions that must meet in one row.
struct Interaction {
  int n = 2;
  std::array<int, 3> dims{}, values{};
  std::string text() const;  // "dim 3 = 1, dim 5 = 0"
};

// Every interaction the request requires: all pairs and the asked triples a valid row can hold.
std::vector<Interaction> required_interactions(const CoveringRequest& r);

// The rows, in the order built. Every required interaction is in one of them.
std::vector<CoverRow> build_covering_array(const CoveringRequest& r, uint64_t seed, int candidates_per_row = 16);

// A valid row drawn at random: dimensions in a shuffled order, each value uniform among those
// that keep the row completable.
CoverRow random_row(const CoveringRequest& r, SplitMix& rng);

// The required interactions no row holds (a test's evidence of coverage).
std::vector<Interaction> missing_interactions(const CoveringRequest& r, const std::vector<CoverRow>& rows);

}  // namespace evo
