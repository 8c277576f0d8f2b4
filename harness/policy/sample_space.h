// gates.json "sampled": the space the correctness gate draws extra cases from on every run
// (besides the visible fixed sets), inside the op's input domain (common/evo_domain.h: every
// bound is checked against it when gates.json is read). It has twelve dimensions, each a list of values; a run's
// cases are the rows of a covering array over them (every pair of values of every two
// dimensions meets in some case, and the triples a tier asks for too: see
// harness/core/covering_array.h and harness/run/sampler.cpp), built from the run's gate seed.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace evo {

// The dimensions, in the order of a covering row. Their gates.json names: sample_dim_name().
enum SampleDim {
  kDimLayout,
  kDimAlignment,
  kDimBatch,
  kDimHeads,
  kDimSeqQ,
  kDimSeqKv,
  kDimSeqQResidue,
  kDimSeqKvResidue,
  kDimDiagonal,
  kDimScale,
  kDimInputs,
  kDimJunk,
  kSampleDims
};
const char* sample_dim_name(int dim);

// Query/KV head counts of a released model (its GQA/MQA ratio is heads_q / heads_kv).
struct HeadConfig {
  int heads_q = 1, heads_kv = 1;
};

// A class of head configs with a like ratio (MHA, powers of two, other ratios, MQA, ...): the
// covering array picks the class, the case one of its configs.
struct HeadClass {
  std::string name;
  std::vector<HeadConfig> configs;
};

// A named integer range: a batch class or a length class (Sq and Skv draw from the same list).
struct NamedRange {
  std::string name;
  int lo = 1, hi = 1;
};

// A length's remainder: x64 (a multiple of 64), x8 (a multiple of 8, not of 64), x2 (2 mod 4:
// even, not a multiple of 4, so no vector or pair path of 4 or 8 divides it), odd.
enum class Residue { x64, x8, x4, x2, odd };
// Where the causal diagonal ends: Sq < Skv, Sq = Skv, Sq > Skv.
enum class Diagonal { lt, eq, gt };

// A softmax scale: `factor`, `factor/sqrt(D)` or `factor/D`, spelled as in gates.json; or a
// range "LO..HI" of two such ends, from which each case draws its own scale (log-uniform), so
// the gate tries scales between the listed points too (the op accepts any in (0, 1]).
struct ScaleChoice {
  std::string text;
  double factor = 1;
  enum Kind { constant, per_sqrt_d, per_d } kind = per_sqrt_d;
  bool range = false;  // then factor and kind are the lower end, these the upper
  double hi_factor = 1;
  Kind hi_kind = constant;
  double value(int head_dim) const;  // a point's scale; a range's lower end
  double upper(int head_dim) const;  // a range's upper end; a point's scale
};

// How a tier draws its cases: a covering array (all pairs, plus these triples of dimensions),
// then `random_cases` valid rows drawn at random, then more until there are `min_cases`. A tier
// may reach further than the space's own bounds: its length classes replace the space's, its
// bounds theirs (empty, 0: the space's).
struct CoverageTier {
  std::vector<std::array<int, 3>> triples;
  int random_cases = 0;
  int min_cases = 0;
  std::vector<NamedRange> lengths;
  int64_t max_tensor_elements = 0;
  double max_flops = 0;
  // Scales this tier draws beside the space's (`extra_scales`; hacker round 17: the deep tier's band
  // 0.125/D..0.25/sqrt(D), so the cheap tier's scale x input pairs do not grow).
  std::vector<ScaleChoice> extra_scales;
  // Case-kind switches (SampleSpace's booleans below, by their gates.json names) this tier sets for
  // itself: a kind only a would-be elite must meet can run in the deep tier alone, where only a
  // candidate about to enter a top 3 pays for it (issue 29's cost ceiling for every other one).
  std::map<std::string, bool> switches;
};

struct SampleSpace {
  bool enabled = false;
  int64_t max_tensor_elements = 0;  // per buffer, padding included
  double max_flops = 0;             // per case (4·B·Hq·Sq·Skv·D, before the causal mask)
  std::vector<NamedRange> batch;
  std::vector<HeadClass> heads;
  std::vector<NamedRange> lengths;
  std::vector<std::string> residues;   // "x64", "x8", "x4", "x2", "odd"
  std::vector<std::string> diagonals;  // "lt", "eq", "gt"
  std::vector<std::string> layouts;    // bhsd, bshd, packed_qkv, mixed, kv_cache, strided
  std::vector<int> alignments;         // bytes: each tensor's address is this mod 256 (256: 0)
  std::vector<ScaleChoice> scales;
  std::vector<std::string> inputs;  // names of gates.json "inputs"
  std::vector<std::string> junk;    // what padding and guard bands hold: finite, nonfinite (gpu/input_fill.h)
  int two_streams = 0;              // cases per tier launched on two streams at once (CaseSpec::two_streams)
  // Shapes (BxHqxHkvxSqxSkvxD) run on two streams once per share ("q", "kv") in every tier:
  // few enough tiles that both grids are resident at once and long enough that every row of
  // one is in flight beside its like-numbered row of the other. A drawn two-stream case may
  // fill the GPU, so its second grid starts as the first drains (run/sampler.cpp). One of each
  // head class, MHA, GQA and MQA (hacker round 14: two GQA shapes, so an input changed in place
  // and restored on the MHA path alone was never read in flight).
  std::vector<std::string> in_flight;
  // Per tier, one more case for each: "qk" (Q and K one view), "kv" (K and V one view), "qv" (Q
  // and V one view, K apart), "qkv" (all three one view, attention(x, x, x)), made from a drawn
  // case (gpu/case_layout.h "+qk", ...): the domain lets the inputs share memory. Since hacker
  // round 24 a listed view also turns on its forms (run/sampler.h kSharedShortMinKeys): "qk" a
  // qk:short and a qk_prefix case, "qkv" a qkv:short and a qkv_prefix, "kv" a kv:decode or
  // kv:prefill.
  std::vector<std::string> shared;
  CoverageTier cheap, deep;
  bool device_check = true;  // sampled cases are hashed, referenced and compared on the GPU (run/large_cases.h)
  // Hacker round 28's value cases (run/value_cases.h), after every other case of each tier of a 16-bit
  // task; "value_cases": false leaves them out (the tests compare a tier with and without them).
  bool value_cases = true;
  // Hacker round 29's scale cases (run/value_cases.h append_scale_cases), after the value cases of
  // each tier of every task; "scale_cases": false leaves them out.
  bool scale_cases = true;
  // Hacker round 29's fused-buffer cases (run/value_cases.h append_fused_qkv_cases), after the scale
  // cases; "fused_qkv_cases": false leaves them out.
  bool fused_qkv_cases = true;
  // The close of round 29's four cut holes, after the fused-buffer cases, in this order: the model
  // decode steps whose cut shortened their cache again at one sequence over the whole cache
  // (run/model_cases.h append_whole_cache_model_cases), value kinds over a long cache and a wide
  // group (run/value_cases.h append_long_value_cases), a GQA training step cut in heads
  // (append_training_step_cases). "whole_cache_model_cases", "long_value_cases" and
  // "training_step_cases": false leaves each out.
  bool whole_cache_model_cases = true;
  bool long_value_cases = true;
  bool training_step_cases = true;
  // The close of hacker round 30, after the training step, in this order, each kind's fixed
  // dimensions drawn per run: the whole-cache decode steps again at a batch of 2 or 3
  // (run/model_cases.h append_batched_model_cases), a Gemma 2 or 3 27B call, 32 over 16 heads at
  // its own scale (append_gemma_27b_cases), a fused-buffer prefill past 512 tokens
  // (run/value_cases.h append_long_fused_qkv_cases), a long value case over a BHSD cache
  // (append_bhsd_long_value_cases), a served decode batch padded to a multiple of 8
  // (run/model_cases.h append_padded_decode_cases). Each switch false leaves its kind out.
  bool batched_model_cases = true;
  bool gemma_27b_cases = true;
  bool long_fused_qkv_cases = true;
  bool bhsd_long_value_cases = true;
  bool padded_decode_cases = true;
  // Hacker round 30's second close (run/batch_cases.h), after the padded decode batch, in this
  // order: a beam search's prefill, whole sequences repeated (append_beam_prefill_cases), a GQA
  // training step over 4 KV heads or more (append_gqa_training_step_cases, the deep tier's bounds
  // only), Phi-4's 40 over 10 heads on a causal prefill past 2048 keys (append_phi4_prefill_cases,
  // likewise), a power-of-two cache and GPT-NeoX's interleaved V (append_model_layout_cases).
  // Each switch false leaves its kind out.
  bool beam_prefill_cases = true;
  bool gqa_training_step_cases = true;
  bool phi4_prefill_cases = true;
  bool model_layout_cases = true;
  // Hacker round 31's close (run/batch_cases.h, lab/hack31/README.md "Close"): a kind's range is the
  // models', not the try's threshold. "model_ranges" widens the draws of round 30's kinds from
  // streams of their own (the Gemma call over 513 to 8192 keys and, in the deep tier, a prefill of
  // 513 to 2048 tokens; a served decode batch of 8 to 256 sequences over 1024 keys or more; the GQA
  // training step's cap 2^37 at D 128; the Phi-4 prefill from one sequence; pow2_cache from one
  // sequence; neox_v's GQA form), so every case before those kinds keeps its id and draws;
  // "released_heads_cases" appends, after every other case, a small call of each released model's
  // (Hq, Hkv) pair no heads class lists (append_released_heads_cases). Each false leaves it out.
  bool model_ranges = true;
  bool released_heads_cases = true;
  // The close of round 31's narrowed holes (run/batch_cases.h append_model_range_end_cases), after
  // the released pairs: pow2_cache at one sequence, Phi-4 on one prompt past 2048 tokens and a
  // Gemma prefill past 544 tokens, each where the tier drew no case of the kind at that end.
  // gates.json's cheap tier sets it false (the deep tier alone). False leaves it out.
  bool model_range_ends = true;
  // Hacker round 32's close (run/served_model_cases.h), after the range ends, in this order: a small
  // call of each tensor-parallel shard of a listed model no list holds ("tensor_parallel_shards",
  // both tiers), a decoder's step over an encoder's fixed length ("fixed_length_steps", unmasked
  // tasks, both tiers) and the encoders' whole calls ("fixed_length_calls": gates.json's cheap tier
  // sets it false, the deep tier alone). Each false leaves its kind out.
  bool tensor_parallel_shards = true;
  bool fixed_length_steps = true;
  bool fixed_length_calls = true;
  // Then Flux.1's joint attention, 1x24x24x4608x4608 unmasked (append_joint_attention_calls;
  // gates.json's cheap tier sets it false, the deep tier alone). False leaves it out.
  bool joint_attention_calls = true;
  // Then round 32's open holes closed (run/view_layout_cases.h): Q alone a fused projection's view
  // and a head-major power-of-two cache, each where its strides reach a kernel, both tiers.
  bool view_layout_cases = true;
  // Then hacker round 33's KV-packed cache (run/view_layout_cases.h append_kv_packed_cases), both
  // tiers: K and V views of flash-attn's [B, C, 2, Hkv, D] inference cache.
  bool kv_packed_cases = true;
  // Then hacker round 33's three length holes (run/whole_call_cases.h), in this order: a whole window
  // of 4096 rows at one head ("whole_window_calls", both tiers), the vision towers' fixed lengths at
  // one image ("vision_tower_calls") and a GQA prefill past 8192 tokens ("long_gqa_prefill_cases";
  // gates.json's cheap tier sets both false, the deep tier alone). Each false leaves its kind out.
  bool whole_window_calls = true;
  bool vision_tower_calls = true;
  bool long_gqa_prefill_cases = true;
  // Not a kind: the BHSD long value case (append_bhsd_long_value_cases) drawn at one KV head takes
  // two, its group kept. A launch passes a dim of size 1 with the stride D (evo_launch_stride), so
  // at one KV head a BHSD cache's head stride reaches no kernel: round 30's K outlier channels over
  // a BHSD cache went uncaught in 14 of 21 pinned runs' cheap tiers (found 2026-12-03). False: one.
  bool bhsd_two_kv_heads = true;

  // Values per dimension, in SampleDim order.
  std::vector<int> sizes() const;
  // The space a tier draws from: this one with the tier's length classes, bounds and switches.
  SampleSpace for_tier(const CoverageTier& tier) const;
};

Residue residue_of(const std::string& name);
// Whether `v` has residue `r` (the residues are disjoint and cover every length).
bool has_residue(int v, Residue r);
Diagonal diagonal_of(const std::string& name);

// Throws usage_error naming `where` and the field on any malformed entry.
SampleSpace parse_sample_space(const nlohmann::json& j, const std::string& where);
ScaleChoice parse_scale(const std::string& text, const std::string& where);
// Layout names the worker knows.
bool known_case_layout(const std::string& name);

}  // namespace evo
