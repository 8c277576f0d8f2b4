// A dataset small enough to simulate in no time, whose answer is known (the ablation's and its
// cache's tests).
#pragma once
#include <map>

#include "ablate/dataset.h"
#include "support/test_support.h"

namespace evo::test {

// tests/fixtures/datasets/'s synthetic stage-7 dataset, and the dataset read from it (once).
inline std::filesystem::path synthetic_fixture() {
  return source_root() / "tests/fixtures/datasets/synthetic-stage7-fp16-d128.json";
}
inline const Dataset& synthetic() {
  static const Dataset d = read_dataset(synthetic_fixture());
  return d;
}

// Four allowed configurations (A=4 breaks the rule), each measured in full at 1 GPU-s, none
// screened: A=1 B=0 the optimum (100 µs), A=1 B=1 +0.5 %, A=2 B=0 +1.5 %, A=2 B=1 +10 %.
inline Dataset tiny_dataset() {
  Dataset d;
  d.gpu = "nvidia-h200", d.task = "fp16-d64", d.run = "ev-tiny", d.stage = 9;
  d.header = read_text(source_root() / "variants/common/evo_attn.cuh");
  d.variants.push_back({"9-test/t",
                        "variants/9-test/t.cu",
                        R"(/*evo {"summary": "t", "params": {"A": [1, 2, 4], "B": [0, 1]}, "dtypes": ["fp16"],
 "head_dims": [64]} */
#include "evo_attn.cuh"
EVO_CONSTRAINT(A != 4, "A=4 is out");
)",
                        {{"A", {1, 2, 4}}, {"B", {0, 1}}}});
  d.shapes = {"1x8x8x512x512x64"};
  const std::map<std::pair<long, long>, double> us = {{{1, 0}, 100}, {{1, 1}, 100.5}, {{2, 0}, 101.5}, {{2, 1}, 110}};
  for (long a : {1, 2, 4})
    for (long b : {0, 1}) {
      DatasetConfig c;
      c.variant = "9-test/t";
      c.params = {{"A", a}, {"B", b}};
      if (a == 4) {
        c.outcome = "constraints";
      } else {
        c.outcome = "ok";
        const double t = us.at({a, b});
        c.full = DatasetEval{"ok", "", t, {{"1x8x8x512x512x64", t}}, 1.0, "c", 0};
      }
      d.configs.push_back(c);
    }
  return d;
}

}  // namespace evo::test
