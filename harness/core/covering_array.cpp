#include "core/covering_array.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace evo {

namespace {

uint64_t key_of(const Interaction& t) {
  uint64_t k = uint64_t(t.n);
  for (int i = 0; i < t.n; ++i) k = (k << 20) | (uint64_t(t.dims[i]) << 10) | uint64_t(t.values[i]);
  return k;
}

// Dimensions in ascending order, values beside them, read from a (partial) row.
Interaction from_row(const CoverRow& row, std::array<int, 3> dims, int n) {
  std::sort(dims.begin(), dims.begin() + n);
  Interaction t;
  t.n = n;
  for (int i = 0; i < n; ++i) {
    t.dims[i] = dims[i];
    t.values[i] = row[size_t(dims[i])];
  }
  return t;
}

bool holds(const CoverRow& row, const Interaction& t) {
  for (int i = 0; i < t.n; ++i)
    if (row[size_t(t.dims[i])] != t.values[i]) return false;
  return true;
}

bool valid_row(const CoveringRequest& r, const CoverRow& row) { return !r.completable || r.completable(row); }

void shuffle(std::vector<int>& v, SplitMix& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

void check_request(const CoveringRequest& r) {
  for (int s : r.sizes)
    if (s < 1 || s > 1000) throw std::invalid_argument("covering array: a dimension needs 1 to 1000 values");
  for (const auto& t : r.triples)
    for (int i = 0; i < 3; ++i)
      if (t[size_t(i)] < 0 || t[size_t(i)] >= int(r.sizes.size()) || t[size_t(i)] == t[size_t((i + 1) % 3)])
        throw std::invalid_argument("covering array: a triple names three different dimensions");
}

// The greedy state: which required interactions are still missing. An interaction is found by
// its slot in a dense table (each pair of dimensions, then each asked triple, a block of all
// their values), or where that table would pass 2^24 slots by its key in a hash map.
class Builder {
 public:
  explicit Builder(const CoveringRequest& r) : r_(r), req_(required_interactions(r)), covered_(req_.size(), 0) {
    left_ = req_.size();
    const size_t n = r.sizes.size();
    size_t slots = 0;
    pair_base_.assign(n * n, 0);
    for (size_t a = 0; a < n; ++a)
      for (size_t b = a + 1; b < n; ++b) {
        pair_base_[a * n + b] = slots;
        slots += size_t(r.sizes[a]) * size_t(r.sizes[b]);
      }
    for (auto t : r.triples) {
      std::sort(t.begin(), t.end());
      sorted_.push_back(t);
      triple_base_.push_back(slots);
      slots += size_t(r.sizes[size_t(t[0])]) * size_t(r.sizes[size_t(t[1])]) * size_t(r.sizes[size_t(t[2])]);
    }
    dense_ = slots <= (size_t(1) << 24);
    if (dense_) slot_.assign(slots, -1);
    for (size_t i = 0; i < req_.size(); ++i) {
      const Interaction& t = req_[i];
      if (!dense_)
        index_[key_of(t)] = i;
      else if (t.n == 2)
        slot_[pair_slot(t.dims[0], t.dims[1], t.values[0], t.values[1])] = int32_t(i);
      else
        for (size_t j = 0; j < sorted_.size(); ++j)
          if (sorted_[j] == t.dims) slot_[triple_slot(j, t.values[0], t.values[1], t.values[2])] = int32_t(i);
    }
  }

  bool done() const { return left_ == 0; }

  // One candidate row: a missing interaction, then the rest dimension by dimension.
  CoverRow grow(SplitMix& rng) const {
    size_t k = rng.below(left_);
    size_t i = 0;
    for (;; ++i)
      if (!covered_[i] && k-- == 0) break;
    CoverRow row(r_.sizes.size(), -1);
    const Interaction& seed = req_[i];
    for (int j = 0; j < seed.n; ++j) row[size_t(seed.dims[j])] = seed.values[j];
    std::vector<int> order;
    for (int d = 0; d < int(row.size()); ++d)
      if (row[size_t(d)] < 0) order.push_back(d);
    shuffle(order, rng);
    for (int d : order) row[size_t(d)] = best_value(row, d, rng);
    return row;
  }

  // Missing interactions a complete row holds.
  size_t gain_of(const CoverRow& row) const {
    size_t g = 0;
    for (int a = 0; a < int(row.size()); ++a)
      for (int b = a + 1; b < int(row.size()); ++b) g += !covered(find_pair(row, a, b));
    for (size_t j = 0; j < sorted_.size(); ++j) g += !covered(find_triple(row, j));
    return g;
  }

  void take(const CoverRow& row) {
    for (int a = 0; a < int(row.size()); ++a)
      for (int b = a + 1; b < int(row.size()); ++b) cover(find_pair(row, a, b));
    for (size_t j = 0; j < sorted_.size(); ++j) cover(find_triple(row, j));
  }

 private:
  static constexpr size_t kNone = size_t(-1);
  size_t pair_slot(int a, int b, int va, int vb) const {
    return pair_base_[size_t(a) * r_.sizes.size() + size_t(b)] + size_t(va) * size_t(r_.sizes[size_t(b)]) + size_t(vb);
  }
  size_t triple_slot(size_t j, int va, int vb, int vc) const {
    const auto& d = sorted_[j];
    return triple_base_[j] +
           (size_t(va) * size_t(r_.sizes[size_t(d[1])]) + size_t(vb)) * size_t(r_.sizes[size_t(d[2])]) + size_t(vc);
  }
  size_t lookup(const Interaction& t) const {
    auto it = index_.find(key_of(t));
    return it == index_.end() ? kNone : it->second;
  }
  // The required interaction (its index) of a row's values of dimensions a and b, or kNone.
  size_t find_pair(const CoverRow& row, int a, int b) const {
    if (a > b) std::swap(a, b);
    if (!dense_) return lookup(from_row(row, {a, b, 0}, 2));
    const int32_t i = slot_[pair_slot(a, b, row[size_t(a)], row[size_t(b)])];
    return i < 0 ? kNone : size_t(i);
  }
  // Likewise of the j-th asked triple.
  size_t find_triple(const CoverRow& row, size_t j) const {
    if (!dense_) return lookup(from_row(row, r_.triples[j], 3));
    const auto& d = sorted_[j];
    const int32_t i = slot_[triple_slot(j, row[size_t(d[0])], row[size_t(d[1])], row[size_t(d[2])])];
    return i < 0 ? kNone : size_t(i);
  }
  // Not required, or covered already.
  bool covered(size_t i) const { return i == kNone || covered_[i]; }
  void cover(size_t i) {
    if (covered(i)) return;
    covered_[i] = 1;
    --left_;
  }

  // Missing interactions that value v of d completes with the dimensions already chosen.
  size_t gain(const CoverRow& row, int d) const {
    size_t g = 0;
    for (int e = 0; e < int(row.size()); ++e)
      if (e != d && row[size_t(e)] >= 0) g += !covered(find_pair(row, d, e));
    for (size_t j = 0; j < sorted_.size(); ++j) {
      const auto& t = r_.triples[j];
      if ((t[0] == d || t[1] == d || t[2] == d) && row[size_t(t[0])] >= 0 && row[size_t(t[1])] >= 0 &&
          row[size_t(t[2])] >= 0)
        g += !covered(find_triple(row, j));
    }
    return g;
  }

  // The completable value of d with the largest gain; ties broken at random (reservoir).
  int best_value(CoverRow& row, int d, SplitMix& rng) const {
    int best = -1;
    size_t best_gain = 0, ties = 0;
    for (int v = 0; v < r_.sizes[size_t(d)]; ++v) {
      row[size_t(d)] = v;
      if (!valid_row(r_, row)) continue;
      const size_t g = gain(row, d);
      if (best < 0 || g > best_gain) {
        best = v;
        best_gain = g;
        ties = 1;
      } else if (g == best_gain && rng.below(++ties) == 0) {
        best = v;
      }
    }
    if (best < 0) throw std::logic_error("covering array: a completable row has no completable value");
    return best;
  }

  const CoveringRequest& r_;
  std::vector<Interaction> req_;
  std::vector<char> covered_;
  size_t left_ = 0;
  bool dense_ = true;
  std::vector<size_t> pair_base_, triple_base_;  // [a * dims + b], [asked triple]: a block's first slot
  std::vector<std::array<int, 3>> sorted_;       // the asked triples' dimensions, ascending
  std::vector<int32_t> slot_;                    // the required interaction's index, or -1
  std::unordered_map<uint64_t, size_t> index_;   // by key_of, when not dense_
};

}  // namespace

std::string Interaction::text() const {
  std::string s;
  for (int i = 0; i < n; ++i) s += fmt::format("{}dim {} = {}", i ? ", " : "", dims[size_t(i)], values[size_t(i)]);
  return s;
}

std::vector<Interaction> required_interactions(const CoveringRequest& r) {
  check_request(r);
  std::vector<Interaction> out;
  const int n = int(r.sizes.size());
  CoverRow row(size_t(n), -1);
  auto add = [&](std::array<int, 3> dims, int k) {
    std::sort(dims.begin(), dims.begin() + k);
    std::array<int, 3> v{0, 0, 0};
    while (true) {
      for (int i = 0; i < k; ++i) row[size_t(dims[size_t(i)])] = v[size_t(i)];
      if (valid_row(r, row)) out.push_back(from_row(row, dims, k));
      int i = k - 1;
      while (i >= 0 && ++v[size_t(i)] == r.sizes[size_t(dims[size_t(i)])]) v[size_t(i--)] = 0;
      if (i < 0) break;
    }
    for (int i = 0; i < k; ++i) row[size_t(dims[size_t(i)])] = -1;
  };
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) add({a, b, 0}, 2);
  std::vector<std::array<int, 3>> seen;
  for (auto t : r.triples) {
    std::sort(t.begin(), t.end());
    if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
    seen.push_back(t);
    add(t, 3);
  }
  return out;
}

namespace {

// Every interaction a row holds, required or not (pairs, then the asked triples).
std::vector<Interaction> interactions_of(const CoveringRequest& r, const CoverRow& row) {
  std::vector<Interaction> out;
  for (int a = 0; a < int(row.size()); ++a)
    for (int b = a + 1; b < int(row.size()); ++b) out.push_back(from_row(row, {a, b, 0}, 2));
  for (const auto& t : r.triples) out.push_back(from_row(row, t, 3));
  return out;
}

// Drops rows (the earliest first: the greedy's first rows are its least dense) whose every
// interaction another kept row also holds.
void drop_redundant_rows(const CoveringRequest& r, std::vector<CoverRow>& rows) {
  std::unordered_map<uint64_t, int> count;
  for (const auto& row : rows)
    for (const auto& t : interactions_of(r, row)) ++count[key_of(t)];
  std::vector<CoverRow> kept;
  for (const auto& row : rows) {
    const auto ts = interactions_of(r, row);
    if (std::all_of(ts.begin(), ts.end(), [&](const Interaction& t) { return count[key_of(t)] > 1; })) {
      for (const auto& t : ts) --count[key_of(t)];
      continue;
    }
    kept.push_back(row);
  }
  rows = std::move(kept);
}

}  // namespace

std::vector<CoverRow> build_covering_array(const CoveringRequest& r, uint64_t seed, int candidates_per_row) {
  SplitMix rng{seed};
  Builder b(r);
  std::vector<CoverRow> rows;
  while (!b.done()) {
    CoverRow best;
    size_t best_gain = 0;
    for (int c = 0; c < std::max(1, candidates_per_row); ++c) {
      CoverRow row = b.grow(rng);
      const size_t g = b.gain_of(row);
      if (best.empty() || g > best_gain) {
        best = std::move(row);
        best_gain = g;
      }
    }
    b.take(best);
    rows.push_back(std::move(best));
  }
  drop_redundant_rows(r, rows);
  return rows;
}

CoverRow random_row(const CoveringRequest& r, SplitMix& rng) {
  CoverRow row(r.sizes.size(), -1);
  std::vector<int> order;
  for (int d = 0; d < int(row.size()); ++d) order.push_back(d);
  shuffle(order, rng);
  for (int d : order) {
    std::vector<int> ok;
    for (int v = 0; v < r.sizes[size_t(d)]; ++v) {
      row[size_t(d)] = v;
      if (valid_row(r, row)) ok.push_back(v);
    }
    if (ok.empty()) throw std::logic_error("covering array: no valid row");
    row[size_t(d)] = ok[rng.below(ok.size())];
  }
  return row;
}

std::vector<Interaction> missing_interactions(const CoveringRequest& r, const std::vector<CoverRow>& rows) {
  std::vector<Interaction> out;
  for (const Interaction& t : required_interactions(r))
    if (std::none_of(rows.begin(), rows.end(), [&](const CoverRow& row) { return holds(row, t); })) out.push_back(t);
  return out;
}

}  // namespace evo
