#include "run/whole_call_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "run/model_cases.h"

namespace evo {

namespace {

// One sequence of `heads_q` over `heads_kv` heads, Sq = Skv = `tokens`, at the task's head dim.
Shape whole_call(const Task& task, int heads_q, int heads_kv, int tokens, Layout layout) {
  Shape s;
  s.batch = 1;
  s.heads_q = heads_q;
  s.heads_kv = heads_kv;
  s.head_dim = task.head_dim;
  s.seq_q = s.seq_kv = tokens;
  s.layout = layout;
  return s;
}

void push_if_fits(const GatesConfig& gates, const SampleSpace& space, const SampleRows& rows, const Shape& s,
                  SplitMix& r, const std::string& name, const std::string& prefix, std::vector<CaseSpec>& out) {
  if (rows.fits(s, "")) out.push_back(model_case(gates, space, s, r, name, prefix + std::to_string(out.size())));
}

}  // namespace

// A whole window of a power of two of rows (run/whole_call_cases.h).
void append_whole_window_calls(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  if (!space.whole_window_calls) return;
  SplitMix r{rng.state ^ fnv1a("whole_window_calls")};
  const Shape s = whole_call(task, 1, 1, kWholeWindowRows, Layout::bhsd);
  push_if_fits(gates, space, rows, s, r, fmt::format("whole_window_{}", kWholeWindowRows), prefix, out);
}

// The vision towers' fixed lengths (run/whole_call_cases.h).
void append_vision_tower_calls(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  if (!space.vision_tower_calls) return;
  SplitMix r{rng.state ^ fnv1a("vision_tower_calls")};
  for (const VisionTower& t : kVisionTowers) {
    const Shape s = whole_call(task, kVisionTowerHeads, kVisionTowerHeads, t.tokens, Layout::bhsd);
    push_if_fits(gates, space, rows, s, r, t.name, prefix, out);
  }
  const int g = r.uniform(kVisionGridSides[0], kVisionGridSides[1]);
  const Shape grid = whole_call(task, kVisionTowerHeads, kVisionTowerHeads, g * g + 1, Layout::bhsd);
  push_if_fits(gates, space, rows, grid, r, fmt::format("vit_grid_{}x{}_cls", g, g), prefix, out);
}

// A GQA prefill past 8k tokens (run/whole_call_cases.h).
void append_long_gqa_prefill_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                   const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                   std::vector<CaseSpec>& out) {
  if (!space.long_gqa_prefill_cases) return;
  SplitMix r{rng.state ^ fnv1a("long_gqa_prefill_cases")};
  Shape s = whole_call(task, kLongGqaHeads[0], kLongGqaHeads[1], kLongGqaTokens[1], Layout::bshd);
  // The most tokens within the tier's max_flops (4 Hq L^2 D), then a draw from 8193 up to it.
  const double per_row2 = 4.0 * s.heads_q * s.head_dim;
  const int most = int(std::min<double>(kLongGqaTokens[1], std::floor(std::sqrt(space.max_flops / per_row2))));
  if (most < kLongGqaTokens[0]) return;
  s.seq_q = s.seq_kv = r.uniform(kLongGqaTokens[0], most);
  push_if_fits(gates, space, rows, s, r, "llama_3_8b_tp4_long_prefill", prefix, out);
}

}  // namespace evo
