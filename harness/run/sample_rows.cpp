#include "run/sample_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/errors.h"
#include "gpu/case_layout.h"

namespace evo {

namespace {

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

// Patterns of some dimensions: each dimension's digit is 0 (free) or 1 + its value, the first
// dimension's the slowest.
size_t patterns(const std::vector<int>& dims, const std::vector<int>& sizes) {
  size_t n = 1;
  for (int d : dims) n *= size_t(sizes[size_t(d)] + 1);
  return n;
}
size_t pattern_of(const CoverRow& row, const std::vector<int>& dims, const std::vector<int>& sizes) {
  size_t p = 0;
  for (int d : dims) p = p * size_t(sizes[size_t(d)] + 1) + size_t(row[size_t(d)] + 1);
  return p;
}

// Every pattern's bit set (`words` each). A complete pattern's is `leaf(its odometer index, bits)`;
// one with a free dimension is the union of those with its last free dimension's every value,
// which are numbered after it (so built first, from the last pattern down).
template <class Leaf>
std::vector<uint64_t> pattern_masks(const std::vector<int>& dims, const std::vector<int>& sizes, size_t words,
                                    Leaf leaf) {
  const size_t n = patterns(dims, sizes);
  std::vector<uint64_t> out(n * words, 0);
  for (size_t p = n; p-- > 0;) {
    size_t rest = p, place = 1, index = 0, index_place = 1, free_place = 0;
    int free_values = 0;
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
      const size_t values = size_t(sizes[size_t(*it)]), digit = rest % (values + 1);
      rest /= values + 1;
      if (digit == 0 && free_values == 0) {
        free_place = place;
        free_values = int(values);
      }
      index += (digit ? digit - 1 : 0) * index_place;
      index_place *= values;
      place *= values + 1;
    }
    uint64_t* bits = &out[p * words];
    if (free_values == 0) leaf(index, bits);
    for (int v = 1; v <= free_values; ++v)
      for (size_t w = 0; w < words; ++w) bits[w] |= out[(p + size_t(v) * free_place) * words + w];
  }
  return out;
}

// Everything the tables read: the space's bounds and the values of the dimensions that decide
// a row's fit (lengths, residues, diagonals, layouts, alignments, batch and head classes), the
// dimensions' sizes, and the task (head dim, element sizes).
std::string tables_key(const SampleSpace& sp, const Task& task) {
  std::string k = fmt::format("{} {} {} {} {}|", task.name(), task.input_bytes(), task.output_bytes(),
                              sp.max_tensor_elements, sp.max_flops);
  for (int n : sp.sizes()) k += fmt::format("{},", n);
  for (const NamedRange& r : sp.lengths) k += fmt::format("|{}..{}", r.lo, r.hi);
  for (const NamedRange& r : sp.batch) k += fmt::format("|{}..{}", r.lo, r.hi);
  for (const HeadClass& c : sp.heads) {
    k += "|";
    for (const HeadConfig& h : c.configs) k += fmt::format("{}/{},", h.heads_q, h.heads_kv);
  }
  for (const auto* names : {&sp.residues, &sp.diagonals, &sp.layouts})
    for (const std::string& n : *names) k += "|" + n;
  for (int a : sp.alignments) k += fmt::format("|{}", a);
  return k;
}

}  // namespace

SampleRows::SampleRows(const SampleSpace& space, const Task& task) : sp_(space), task_(task), sizes_(sp_.sizes()) {
  for (int n : sizes_)
    if (n < 1 || n > 100) throw usage_error("gates.json sampled: each dimension needs 1 to 100 values");
  for (const std::string& layout : sp_.layouts)
    for (int align : sp_.alignments) layout_names_.push_back(fmt::format("{}@{}", layout, align));
  drawn_.clear();
  for (const auto& cls : sp_.heads) drawn_.emplace_back(cls.configs.size(), 0);
  // The tables of the spaces this process drew from: a run draws each tier more than once, a
  // test many runs of a few spaces.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Tables>> cache;
  const std::string key = tables_key(sp_, task_);
  {
    const std::lock_guard lock(mutex);
    if (const auto it = cache.find(key); it != cache.end()) {
      t_ = it->second;
      return;
    }
  }
  auto built = std::make_shared<Tables>();
  const int nl = int(sp_.lengths.size()), nr = int(sp_.residues.size()), nd = int(sp_.diagonals.size());
  for (int q = 0; q < nl; ++q)
    for (int k = 0; k < nl; ++k)
      for (int rq = 0; rq < nr; ++rq)
        for (int rk = 0; rk < nr; ++rk)
          for (int d = 0; d < nd; ++d) built->lengths.push_back(smallest(q, k, rq, rk, d));
  built->sizes_count = indices(CoverRow(kSampleDims, -1), kSizeDims, sizes_).size();
  build_valid(*built);
  build_masks(*built);
  t_ = built;
  const std::lock_guard lock(mutex);
  if (cache.size() >= 64) cache.clear();  // a bound for a long-lived process
  cache.emplace(key, t_);
}

// Whether each row of a length index and a size index fits the bounds. A row's fit reads its
// length dimensions only through their smallest lengths, so length indices of one pair of them
// share their part of the table (computed once).
void SampleRows::build_valid(Tables& t) const {
  t.valid.assign(t.lengths.size() * t.sizes_count, 0);
  std::map<std::pair<int, int>, size_t> computed;  // smallest (Sq, Skv) -> its first length index
  CoverRow row(kSampleDims, 0);
  for (size_t li = 0; li < t.lengths.size(); ++li) {
    const Lengths& l = t.lengths[li];
    if (l.seq_q < 0) continue;
    char* out = &t.valid[li * t.sizes_count];
    const auto [first, fresh] = computed.emplace(std::pair{l.seq_q, l.seq_kv}, li);
    if (!fresh) {
      std::copy_n(&t.valid[first->second * t.sizes_count], t.sizes_count, out);
      continue;
    }
    for (size_t si = 0; si < t.sizes_count; ++si) {
      size_t r = si;  // decode the size dims into the row (odometer order, last fastest)
      for (auto it = kSizeDims.rbegin(); it != kSizeDims.rend(); ++it) {
        row[size_t(*it)] = int(r % size_t(sizes_[size_t(*it)]));
        r /= size_t(sizes_[size_t(*it)]);
      }
      out[si] = row_fits(row, l);
    }
  }
}

void SampleRows::build_masks(Tables& t) const {
  t.words = (t.sizes_count + 63) / 64;
  if ((patterns(kLengthDims, sizes_) + patterns(kSizeDims, sizes_)) * t.words > (size_t(1) << 24)) {
    t.words = 0;  // over 128 MiB: completable_by_indices instead
    return;
  }
  t.length_masks = pattern_masks(kLengthDims, sizes_, t.words, [&t](size_t li, uint64_t* m) {
    for (size_t si = 0; si < t.sizes_count; ++si)
      if (t.valid[li * t.sizes_count + si]) m[si / 64] |= uint64_t(1) << (si % 64);
  });
  t.size_masks =
      pattern_masks(kSizeDims, sizes_, t.words, [](size_t si, uint64_t* m) { m[si / 64] |= uint64_t(1) << (si % 64); });
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

size_t SampleRows::length_index(const CoverRow& row) const { return indices(row, kLengthDims, sizes_).front(); }
size_t SampleRows::size_index(const CoverRow& row) const { return indices(row, kSizeDims, sizes_).front(); }

const std::string& SampleRows::layout_name(const CoverRow& row) const {
  return layout_names_[size_t(row[kDimLayout]) * sp_.alignments.size() + size_t(row[kDimAlignment])];
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
  if (!t_->words) return completable_by_indices(partial);
  const uint64_t* l = &t_->length_masks[pattern_of(partial, kLengthDims, sizes_) * t_->words];
  const uint64_t* s = &t_->size_masks[pattern_of(partial, kSizeDims, sizes_) * t_->words];
  for (size_t w = 0; w < t_->words; ++w)
    if (l[w] & s[w]) return true;
  return false;
}

bool SampleRows::completable_by_indices(const CoverRow& partial) const {
  uint64_t key = 0;
  for (int d = 0; d < kDimScale; ++d) key = (key << 7) | uint64_t(partial[size_t(d)] + 1);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  const std::vector<size_t> ls = indices(partial, kLengthDims, sizes_), ss = indices(partial, kSizeDims, sizes_);
  bool ok = false;
  for (size_t li = 0; li < ls.size() && !ok; ++li)
    for (size_t si = 0; si < ss.size() && !ok; ++si) ok = t_->valid[ls[li] * t_->sizes_count + ss[si]];
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
  const Lengths& least = t_->lengths[length_index(row)];
  if (least.seq_q < 0 || !t_->valid[length_index(row) * t_->sizes_count + size_index(row)])
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
