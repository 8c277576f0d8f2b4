#include "run/served_model_cases.h"

#include <fmt/format.h>

#include <algorithm>

#include "run/batch_cases.h"
#include "run/model_cases.h"

namespace evo {

namespace {

bool has(const std::vector<HeadConfig>& list, const HeadConfig& h) {
  return std::any_of(list.begin(), list.end(),
                     [&](const HeadConfig& x) { return x.heads_q == h.heads_q && x.heads_kv == h.heads_kv; });
}

// A call of one sequence at the task's head dim.
Shape one_sequence(const Task& task, int heads_q, int heads_kv, int seq_q, int seq_kv, Layout layout) {
  Shape s;
  s.batch = 1;
  s.heads_q = heads_q;
  s.heads_kv = heads_kv;
  s.head_dim = task.head_dim;
  s.seq_q = seq_q;
  s.seq_kv = seq_kv;
  s.layout = layout;
  return s;
}

void push_if_fits(const GatesConfig& gates, const SampleSpace& space, const SampleRows& rows, const Shape& s,
                  SplitMix& r, const char* name, const std::string& prefix, std::vector<CaseSpec>& out) {
  if (rows.fits(s, "")) out.push_back(model_case(gates, space, s, r, name, prefix + std::to_string(out.size())));
}

}  // namespace

// The shards of the listed models' pairs no list holds (run/served_model_cases.h).
std::vector<HeadConfig> tensor_parallel_shards(const GatesConfig& gates, const SampleSpace& space) {
  std::vector<HeadConfig> models, listed;
  for (const ModelShape& m : gates.model_shapes)
    if (m.shape.heads_q != m.shape.heads_kv && !has(models, {m.shape.heads_q, m.shape.heads_kv}))
      models.push_back({m.shape.heads_q, m.shape.heads_kv});
  for (const ReleasedHeads& h : kReleasedHeads) models.push_back({h.heads_q, h.heads_kv});
  for (const HeadClass& c : space.heads) listed.insert(listed.end(), c.configs.begin(), c.configs.end());
  listed.insert(listed.end(), models.begin(), models.end());
  std::vector<HeadConfig> out;
  for (const HeadConfig& m : models)
    for (const int t : kTensorParallel) {
      if (m.heads_q % t != 0 || (m.heads_kv % t != 0 && t % m.heads_kv != 0)) continue;
      const HeadConfig shard{m.heads_q / t, std::max(1, m.heads_kv / t)};
      if (shard.heads_q == shard.heads_kv || has(listed, shard) || has(out, shard)) continue;
      out.push_back(shard);
    }
  return out;
}

// A server's head shards (run/served_model_cases.h).
void append_tensor_parallel_shard_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                        const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                        std::vector<CaseSpec>& out) {
  if (!space.tensor_parallel_shards) return;
  SplitMix r{rng.state ^ fnv1a("tensor_parallel_shards")};
  for (const HeadConfig& h : tensor_parallel_shards(gates, space)) {
    Shape s = one_sequence(task, h.heads_q, h.heads_kv, 1, 1, Layout::bshd);
    if (task.causal) {  // a decode step's row sees its first keys alone under the top-left mask
      s.seq_q = s.seq_kv = r.uniform(kReleasedHeadsTokens[0], kReleasedHeadsTokens[1]);
    } else {
      s.seq_kv = r.uniform(kReleasedHeadsKeys[0], kReleasedHeadsKeys[1]);
    }
    if (!rows.fits(s, "")) continue;
    out.push_back(model_case(gates, space, s, r, fmt::format("tp_shard_{}_{}", h.heads_q, h.heads_kv),
                             prefix + std::to_string(out.size())));
  }
}

// A decoder's step over an encoder's fixed length (run/served_model_cases.h).
void append_fixed_length_steps(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  if (!space.fixed_length_steps || task.causal) return;
  SplitMix r{rng.state ^ fnv1a("fixed_length_steps")};
  const Shape whisper = one_sequence(task, kWhisperHeads, kWhisperHeads, 1, kWhisperFrames, Layout::bhsd);
  push_if_fits(gates, space, rows, whisper, r, "whisper_decoder_step", prefix, out);
  const int tiles = r.uniform(1, kVisionTiles);
  const Shape vision = one_sequence(task, kVisionHeads[0], kVisionHeads[1], 1, tiles * kVisionTileTokens, Layout::bshd);
  push_if_fits(gates, space, rows, vision, r, "llama_3_2_vision_decode_step", prefix, out);
}

// The encoders' whole calls (run/served_model_cases.h).
void append_fixed_length_calls(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out) {
  if (!space.fixed_length_calls) return;
  SplitMix r{rng.state ^ fnv1a("fixed_length_calls")};
  const Shape whisper = one_sequence(task, kWhisperHeads, kWhisperHeads, kWhisperFrames, kWhisperFrames, Layout::bhsd);
  push_if_fits(gates, space, rows, whisper, r, "whisper_encoder", prefix, out);
  const int* level = kSdxlLevels[r.below(2)];
  Shape sdxl = one_sequence(task, level[1], level[1], level[0], kClipTokens, Layout::bhsd);
  sdxl.batch = kSdxlBatch;
  push_if_fits(gates, space, rows, sdxl, r, "sdxl_cross_attention", prefix, out);
  const int tiles = r.uniform(1, kVisionTiles);
  Shape vision = one_sequence(task, kVisionHeads[0], kVisionHeads[1], r.uniform(kVisionTextRows[0], kVisionTextRows[1]),
                              tiles * kVisionTileTokens, Layout::bshd);
  while (vision.flops(false) > kVisionCrossMaxFlops && vision.seq_q > kVisionTextRows[0])
    vision.seq_q = std::max(kVisionTextRows[0], vision.seq_q / 2);
  push_if_fits(gates, space, rows, vision, r, "llama_3_2_vision_cross_attention", prefix, out);
}

// A diffusion transformer's joint attention (run/served_model_cases.h).
void append_joint_attention_calls(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                  const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                  std::vector<CaseSpec>& out) {
  if (!space.joint_attention_calls || task.causal) return;
  SplitMix r{rng.state ^ fnv1a("joint_attention_calls")};
  const Shape flux = one_sequence(task, kFluxHeads, kFluxHeads, kFluxTokens, kFluxTokens, Layout::bhsd);
  push_if_fits(gates, space, rows, flux, r, "flux_joint_attention", prefix, out);
}

}  // namespace evo
