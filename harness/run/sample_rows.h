// The sampled space of one task (gates.json "sampled") as covering rows: which rows can become
// a case within the space's bounds (max_tensor_elements, max_flops), and the case a row becomes.
// A row holds one value index per dimension (policy/sample_space.h: SampleDim); its lengths
// are drawn log-uniformly in their classes with the row's residues and diagonal, its batch in
// its class, its head config the class's next in turn (of those that fit), then shrunk (batch
// first) until it fits.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/covering_array.h"
#include "core/shape.h"
#include "core/task.h"
#include "policy/sample_space.h"

namespace evo {

class SampleRows {
 public:
  SampleRows(const SampleSpace& space, const Task& task);

  // Sizes, the tier's triples, and the bounds as the covering array's constraint.
  CoveringRequest request(const CoverageTier& tier) const;
  // Whether some row within the bounds agrees with `partial` (-1: any value). Exact.
  bool completable(const CoverRow& partial) const;

  struct Drawn {
    Shape shape;
    std::string layout;  // for CaseSpec::layout: "<layout>@<alignment>" (gpu/case_layout.h)
  };
  // The case of a complete row `completable` accepts; always within the bounds.
  Drawn realize(const CoverRow& row, SplitMix& rng) const;

  // Elements of the largest buffer and FLOPs (4·B·Hq·Sq·Skv·D) of a case.
  int64_t largest_buffer(const Shape& s, const std::string& layout) const;
  bool fits(const Shape& s, const std::string& layout) const;

 private:
  struct Lengths {
    int seq_q = -1, seq_kv = -1;  // the smallest pair with the classes, residues and diagonal; -1: none
  };
  size_t length_index(const CoverRow& row) const;
  size_t size_index(const CoverRow& row) const;
  Lengths smallest(int sq_class, int skv_class, int sq_res, int skv_res, int diag) const;
  Shape base_shape(const CoverRow& row, const HeadConfig& h, int batch) const;
  const std::string& layout_name(const CoverRow& row) const;
  bool row_fits(const CoverRow& row, const Lengths& l) const;
  bool draw_lengths(const CoverRow& row, double shrink, SplitMix& rng, Shape& s) const;
  struct Tables;
  void build_valid(Tables& t) const;
  void build_masks(Tables& t) const;
  bool completable_by_indices(const CoverRow& partial) const;

  const SampleSpace& sp_;
  Task task_;
  std::vector<int> sizes_;                 // sp_.sizes()
  std::vector<std::string> layout_names_;  // [layout][alignment]: layout_name's
  // What the space and the task alone decide: most of a draw's time to build, so kept per
  // process for the spaces drawn from (sample_rows.cpp: tables_key).
  struct Tables {
    std::vector<Lengths> lengths;  // by length_index
    std::vector<char> valid;       // [length_index][size_index]
    size_t sizes_count = 0;
    // `completable` as bit sets over the size indices (when they fit in memory, else empty):
    // per pattern of the length dimensions (each a value or free), the size indices some length
    // index of the pattern holds a valid row with; per pattern of the size dimensions, its own.
    size_t words = 0;
    std::vector<uint64_t> length_masks, size_masks;
  };
  std::shared_ptr<const Tables> t_;  // shared by every SampleRows of one space and task
  mutable std::unordered_map<uint64_t, bool> memo_;
  mutable std::vector<std::vector<int>> drawn_;  // per head class and config: cases realize gave it
};

}  // namespace evo
