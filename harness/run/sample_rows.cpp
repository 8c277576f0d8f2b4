#include "run/sample_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "gpu/case_layout.h"

namespace evo {

namespace {

bool has_residue(int v, Residue r) {
  if (r == Residue::x64) return v % 64 == 0;
  if (r == Residue::x8) return v % 8 == 0 && v % 64 != 0;
  if (r == Residue::x4) return v % 8 == 4;  // hacker round 12: a 4-key (or 4-row) tail
  if (r == Residue::x2) return v % 4 == 2;
  return v % 2 == 1;
}

// The smallest value in [lo, hi] with the residue, or -1 (every window of 128 holds each residue).
int smallest_with(int lo, int hi, Residue r) {
  for (int v = lo; v <= std::min(hi, lo + 128); ++v)
    if (has_residue(v, r)) return v;
  return -1;
}

// The value with the residue nearest below x in [lo, hi], else the nearest above; -1 if none.
int snap(int x, int lo, int hi, Residue r) {
  for (int v = x; v >= std::max(lo, x - 128); --v)
    if (has_residue(v, r)) return v;
  return smallest_with(x, hi, r);
}

// Every index of an odometer over dims whose value is fixed (>= 0) or free (-1 in `row`).
std::vector<size_t> indices(const CoverRow& row, const std::vector<int>& dims, const std::vector<int>& sizes) {
  std::vector<size_t> out{0};
  for (int d : dims) {
    std::vector<size_t> next;
    const int n = sizes[size_t(d)];
    for (size_t base : out)
      for (int v = 0; v < n; ++v)
        if (row[size_t(d)] < 0 || row[size_t(d)] == v) next.push_back(base * size_t(n) + size_t(v));
    out = std::move(next);
  }
  return out;
}

const std::vector<int> kLengthDims{kDimSeqQ, kDimSeqKv, kDimSeqQResidue, kDimSeqKvResidue, kDimDiagonal};
const std::vector<int> kSizeDims{kDimLayout, kDimAlignment, kDimBatch, kDimHeads};

}  // namespace

SampleRows::SampleRows(const SampleSpace& space, const Task& task) : sp_(space), task_(task) {
  const std::vector<int> sizes = sp_.sizes();
  for (int n : sizes)
    if (n < 1 || n > 100) throw usage_error("gates.json sampled: each dimension needs 1 to 100 values");
  const int nl = int(sp_.lengths.size()), nr = int(sp_.residues.size()), nd = int(sp_.diagonals.size());
  for (int q = 0; q < nl; ++q)
    for (int k = 0; k < nl; ++k)
      for (int rq = 0; rq < nr; ++rq)
        for (int rk = 0; rk < nr; ++rk)
          for (int d = 0; d < nd; ++d) lengths_.push_back(smallest(q, k, rq, rk, d));
  sizes_count_ = indices(CoverRow(kSampleDims, -1), kSizeDims, sizes).size();
  valid_.assign(lengths_.size() * sizes_count_, 0);
  drawn_.clear();
  for (const auto& cls : sp_.heads) drawn_.emplace_back(cls.configs.size(), 0);
  CoverRow row(kSampleDims, 0);
  for (size_t li : indices(CoverRow(kSampleDims, -1), kLengthDims, sizes)) {
    if (lengths_[li].seq_q < 0) continue;
    size_t rest = li;  // decode the length dims back into the row (odometer order, last fastest)
    for (auto it = kLengthDims.rbegin(); it != kLengthDims.rend(); ++it) {
      row[size_t(*it)] = int(rest % size_t(sizes[size_t(*it)]));
      rest /= size_t(sizes[size_t(*it)]);
    }
    for (size_t si = 0; si < sizes_count_; ++si) {
      size_t r = si;
      for (auto it = kSizeDims.rbegin(); it != kSizeDims.rend(); ++it) {
        row[size_t(*it)] = int(r % size_t(sizes[size_t(*it)]));
        r /= size_t(sizes[size_t(*it)]);
      }
      valid_[li * sizes_count_ + si] = row_fits(row, lengths_[li]);
    }
  }
}

SampleRows::Lengths SampleRows::smallest(int qc, int kc, int rq, int rk, int d) const {
  const NamedRange &q = sp_.lengths[size_t(qc)], &k = sp_.lengths[size_t(kc)];
  const Residue resq = residue_of(sp_.residues[size_t(rq)]), resk = residue_of(sp_.residues[size_t(rk)]);
  Lengths l;
  switch (diagonal_of(sp_.diagonals[size_t(d)])) {
    case Diagonal::lt:
      l.seq_q = smallest_with(q.lo, q.hi, resq);
      l.seq_kv = l.seq_q < 0 ? -1 : smallest_with(std::max(k.lo, l.seq_q + 1), k.hi, resk);
      break;
    case Diagonal::gt:
      l.seq_kv = smallest_with(k.lo, k.hi, resk);
      l.seq_q = l.seq_kv < 0 ? -1 : smallest_with(std::max(q.lo, l.seq_kv + 1), q.hi, resq);
      break;
    case Diagonal::eq:
      l.seq_q = l.seq_kv = resq == resk ? smallest_with(std::max(q.lo, k.lo), std::min(q.hi, k.hi), resq) : -1;
      break;
  }
  if (l.seq_q < 0 || l.seq_kv < 0) l = Lengths{};
  return l;
}

size_t SampleRows::length_index(const CoverRow& row) const { return indices(row, kLengthDims, sp_.sizes()).front(); }
size_t SampleRows::size_index(const CoverRow& row) const { return indices(row, kSizeDims, sp_.sizes()).front(); }

std::string SampleRows::layout_name(const CoverRow& row) const {
  return fmt::format("{}@{}", sp_.layouts[size_t(row[kDimLayout])], sp_.alignments[size_t(row[kDimAlignment])]);
}

Shape SampleRows::base_shape(const CoverRow& row, const HeadConfig& h, int batch) const {
  Shape s;
  s.set = "sampled";
  s.head_dim = task_.head_dim;
  s.heads_q = h.heads_q;
  s.heads_kv = h.heads_kv;
  s.batch = batch;
  const std::string& layout = sp_.layouts[size_t(row[kDimLayout])];
  s.layout = layout == "bshd" || layout == "packed_qkv" ? Layout::bshd : Layout::bhsd;
  return s;
}

int64_t SampleRows::largest_buffer(const Shape& s, const std::string& layout) const {
  const CaseLayout l = case_layout(s, layout, task_.input_bytes(), task_.output_bytes());
  return std::max({l.q.buffer_elements, l.k.buffer_elements, l.v.buffer_elements, l.o.buffer_elements});
}

bool SampleRows::fits(const Shape& s, const std::string& layout) const {
  const double flops = 4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim;
  return flops <= sp_.max_flops && largest_buffer(s, layout) <= sp_.max_tensor_elements;
}

bool SampleRows::row_fits(const CoverRow& row, const Lengths& l) const {
  for (const HeadConfig& h : sp_.heads[size_t(row[kDimHeads])].configs) {
    Shape s = base_shape(row, h, sp_.batch[size_t(row[kDimBatch])].lo);
    s.seq_q = l.seq_q;
    s.seq_kv = l.seq_kv;
    if (fits(s, layout_name(row))) return true;
  }
  return false;
}

bool SampleRows::completable(const CoverRow& partial) const {
  uint64_t key = 0;
  for (int d = 0; d < kDimScale; ++d) key = (key << 7) | uint64_t(partial[size_t(d)] + 1);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  const std::vector<int> sizes = sp_.sizes();
  const std::vector<size_t> ls = indices(partial, kLengthDims, sizes), ss = indices(partial, kSizeDims, sizes);
  bool ok = false;
  for (size_t li = 0; li < ls.size() && !ok; ++li)
    for (size_t si = 0; si < ss.size() && !ok; ++si) ok = valid_[ls[li] * sizes_count_ + ss[si]];
  memo_[key] = ok;
  return ok;
}

CoveringRequest SampleRows::request(const CoverageTier& tier) const {
  CoveringRequest r;
  r.sizes = sp_.sizes();
  r.triples = tier.triples;
  r.completable = [this](const CoverRow& p) { return completable(p); };
  return r;
}

// Sq and Skv drawn in their classes (upper ends pulled toward the lower by `shrink` in (0, 1]),
// with the row's residues and diagonal; false when this draw misses the diagonal.
bool SampleRows::draw_lengths(const CoverRow& row, double shrink, SplitMix& rng, Shape& s) const {
  const NamedRange &q = sp_.lengths[size_t(row[kDimSeqQ])], &k = sp_.lengths[size_t(row[kDimSeqKv])];
  const Residue rq = residue_of(sp_.residues[size_t(row[kDimSeqQResidue])]);
  const Residue rk = residue_of(sp_.residues[size_t(row[kDimSeqKvResidue])]);
  auto draw = [&](const NamedRange& c, Residue r) {
    const int hi = std::max(c.lo, int(c.lo * std::pow(double(c.hi) / c.lo, shrink)));
    return snap(rng.log_uniform(c.lo, hi), c.lo, c.hi, r);
  };
  s.seq_q = draw(q, rq);
  s.seq_kv = draw(k, rk);
  switch (diagonal_of(sp_.diagonals[size_t(row[kDimDiagonal])])) {
    case Diagonal::eq: s.seq_kv = s.seq_q; return s.seq_q >= k.lo && s.seq_q <= k.hi;
    case Diagonal::lt:
      if (s.seq_q > s.seq_kv && rq == rk && s.seq_q <= k.hi && s.seq_kv >= q.lo) std::swap(s.seq_q, s.seq_kv);
      return s.seq_q < s.seq_kv;
    case Diagonal::gt:
      if (s.seq_q < s.seq_kv && rq == rk && s.seq_kv <= q.hi && s.seq_q >= k.lo) std::swap(s.seq_q, s.seq_kv);
      return s.seq_q > s.seq_kv;
  }
  return false;
}

SampleRows::Drawn SampleRows::realize(const CoverRow& row, SplitMix& rng) const {
  const Lengths& least = lengths_[length_index(row)];
  if (least.seq_q < 0 || !valid_[length_index(row) * sizes_count_ + size_index(row)])
    throw std::logic_error("sampled gate: a covering row outside the space's bounds");
  Drawn out;
  out.layout = layout_name(row);
  const NamedRange& b = sp_.batch[size_t(row[kDimBatch])];
  const std::vector<HeadConfig>& configs = sp_.heads[size_t(row[kDimHeads])].configs;
  std::vector<size_t> fitting;  // the class's configs (indices) that fit at the row's smallest case
  for (size_t i = 0; i < configs.size(); ++i) {
    Shape s = base_shape(row, configs[i], b.lo);
    s.seq_q = least.seq_q;
    s.seq_kv = least.seq_kv;
    if (fits(s, out.layout)) fitting.push_back(i);
  }
  // The class's least-drawn config that fits, the first listed among equals (hacker round 10 took
  // them in turn; round 11: a turn skipped a config that did not fit the row and came back to it
  // only a whole cycle later, so a run whose odd config fitted only some rows could miss it). Every
  // config is drawn as soon as a row of its class fits it. A draw is still consumed, so the stream
  // of the other dimensions moves only where a config changed.
  (void)rng.below(fitting.size());
  std::vector<int>& counts = drawn_[size_t(row[kDimHeads])];
  size_t pick = fitting.front();
  for (size_t i : fitting)
    if (counts[i] < counts[pick]) pick = i;
  ++counts[pick];
  const HeadConfig& h = configs[pick];
  const int batch = b.lo + int(rng.below(size_t(b.hi - b.lo + 1)));
  for (int attempt = 0; attempt < 40; ++attempt) {  // batch halves first, then the lengths shrink
    out.shape = base_shape(row, h, std::max(b.lo, batch >> std::min(attempt, 16)));
    const double shrink = std::pow(0.8, std::max(0, attempt - 4));
    if (draw_lengths(row, shrink, rng, out.shape) && fits(out.shape, out.layout)) return out;
  }
  out.shape = base_shape(row, h, b.lo);  // the smallest case of the row: known to fit
  out.shape.seq_q = least.seq_q;
  out.shape.seq_kv = least.seq_kv;
  return out;
}

}  // namespace evo
