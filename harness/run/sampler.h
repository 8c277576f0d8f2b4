// The sampled part of the correctness gate: cases drawn from gates.json "sampled" with the
// run's gate seed. Unknown before the run (the seed is drawn then), reproducible after it
// (`--gate-seed S` draws the same cases), and recorded in every record.
//
// Two tiers draw from the same space. The cheap tier (every candidate) is a covering array:
// every pair of values of every two dimensions, and the triples gates.json `sampled.cheap`
// names, meet in some case. The deep tier (a candidate about to enter a top-3, before it does)
// is another covering array of the same seed with the triples of `sampled.deep` over its own
// length classes and bounds (up to 128k keys: SampleSpace::for_tier), then random valid cases
// up to `sampled.deep.min_cases`. Both stay inside the op's input domain (common/evo_domain.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"

namespace evo {

inline constexpr const char* kSampledPrefix = "sampled/";
inline constexpr const char* kDeepPrefix = "deep/";

// The case's input distribution `in`, with V's mean `v_mean` (the distribution's, or its opposite).
// Set c.shape and c.scale first: a distribution's sink_score_log2 sets Q's mean and the sink key
// from the head dimension and the scale.
void set_inputs(CaseSpec& c, const InputDistribution& in, double v_mean);

// Hacker round 22: a range's scale `x` (already drawn, of a case on normal or large_v: make_case)
// moved near a listed point inside the range
// in three cases of four (by a hash of x; 1/sqrt(D) in half of those): p (1 +- u), u log-uniform in
// [kNearPointMin, kNearPointMax]; `x` itself otherwise, or where no point lies inside the range.
// `near_common` (the run's first range case on normal and on large_v): always near 1/sqrt(D) where
// the range holds it, u from 2 kNearPointMin.
inline constexpr double kNearPointMin = 1e-3, kNearPointMax = 1e-2;
double near_point_scale(const SampleSpace& sp, const ScaleChoice& range, int head_dim, double x,
                        bool near_common = false);

// The rows of K and V a sampled case's odd batches repeat from the batch before
// (CaseSpec::shared_prefix, gpu/input_fill.h shared_prefix_row; hacker round 22): in one case in
// two of two or more batches and three or more keys, by a hash of the case's seed (the gate's
// stream of draws is unchanged), a length in [2, Skv - 1], so the sequences agree on a prefix
// and then differ; 0 otherwise.
int shared_prefix_rows(const Shape& shape, unsigned seed);

// Whether a shared case (one tensor passed twice: "qk", "kv"; its shape already the shared form's)
// shows what its weights are (hacker round 23): V varies from key to key (huge_logits' V, v_std 0,
// holds one value per column in every row of a sequence, so every weighting of its keys gives the
// same output) and its rows see kSharedMinKeys keys or more (over one key any weighting is exact,
// and a path wrong from its second tile of 128 keys on needs past 128). The sampler takes its one
// case per pair from such a source where one fits the bounds (every pinned run has one), the
// first that fits otherwise. Before, the source was any drawn case: in 12 of the 21 pinned fp16
// and bf16 runs of the cheap tier a shared case saw one key or huge_logits' V, and a kernel whose
// one-view path skipped half its keys was exact on it (shared_qk_half_chunks.cu,
// shared_kv_half_chunks.cu). The stream of draws is unchanged: only which case is copied moves.
inline constexpr int kSharedMinKeys = 256;
bool shared_case_informative(const CaseSpec& c, bool causal);

// Hacker round 24: each shared view also in the other class of a dimension a path may branch on
// with it (run/shared_cases.h append_shared_forms), after every other case of the tier and from
// streams of their own (every other case keeps its draws and its name):
//  - "qk:short", "qkv:short": Q and K one view over kSharedShortMinKeys to kSharedMinKeys - 1
//    keys (Sq = Skv), beside the qk and qkv cases' 256 or more;
//  - "kv:decode" or "kv:prefill": K and V one view in the regime the kv case is not in: a decode
//    step (Sq <= kSharedDecodeRows over kSharedMinKeys to kSharedFormMaxKeys keys) where it is a
//    prefill, a prefill (Sq = Skv over as many) where it is a decode step;
//  - "qk_prefix" (gpu/case_layout.h kQPrefixOfK): Q the first Sq (1 to 255) rows of K's view of
//    256 to kSharedFormMaxKeys keys, one base, Hq = Hkv;
//  - "qkv_prefix" (kQPrefixOfKV): Q the first Sq (1 to kSharedDecodeRows) rows of K's and V's one
//    view of as many keys: Q, K and V one view at a decode step (qkv has Sq = Skv).
// Hacker round 25: the batch is a dimension such a path branches on too (a batched MLA decode, a
// shared-QK encoder on a batch of prompts), and the KV heads (MLA's one latent head), so:
//  - every form draws its batch past 2: kSharedFormMinBatch to kSharedFormMaxBatch sequences, a
//    decode step (Sq <= kSharedDecodeRows) to kSharedDecodeMaxBatch; the source's heads are cut
//    to keep the form within kSharedFormMaxFlops (the batch is what the form is for);
//  - "kv:mla": K and V one view with one KV head under kSharedMlaMinHeads to kSharedMlaMaxHeads
//    query heads (DeepSeek-V2/V3's absorbed decode), a decode step over 256 to 511 keys;
//  - "qk:short:one" and "kv:decode:one" (or "kv:prefill:one"): the short Q = K form and the kv
//    form at one sequence, the other batch class, where a real caller (one prompt, one user's
//    decode) meets the view most.
// Each takes a drawn case's inputs, scale, layout, alignment, junk and heads (where Q shares its
// view: Hkv = Hq) with V that varies, and a fresh seed.
inline constexpr int kSharedShortMinKeys = 33;  // past one 32-key chunk
inline constexpr int kSharedDecodeRows = 16;    // evo_regime.h decode_max_seq_q
inline constexpr int kSharedFormMaxKeys = 511;
inline constexpr int kSharedFormMinBatch = 3;    // past the 1 to 2 that round 24's forms kept
inline constexpr int kSharedFormMaxBatch = 16;   // the space's "many" class
inline constexpr int kSharedDecodeMaxBatch = 8;  // a serving batch; 8 decode steps fit 2^32 at 128 heads of D 128
inline constexpr int kSharedMlaMinHeads = 16, kSharedMlaMaxHeads = 128;  // DeepSeek-V2-Lite's to V3's
inline constexpr double kSharedFormMaxFlops = 4294967296.0;  // 2^32 (4 B Hq Sq Skv D): the heads are cut to fit it

// Hacker round 27: the gate drew classes, not the values real models pass (a KV head count of 10,
// a power-of-two length from 2048 on, a batch of 32 or 64) nor the commonest values at once (a
// GQA decode step at the default scale over a contiguous cache), so paths keyed on those ran only
// by odds or never. Closed by the calls of the models gates.json model_shapes lists, each a case
// of both tiers after every other (run/model_cases.h append_model_cases): the model's heads,
// lengths, batch and view at the default scale, cut by halving to kModelCaseMaxFlops (a decode
// step's cache to no fewer than kModelCaseMinKeys keys first, a prefill's batch first), and one
// GQA prefill of kModelPrefillKeys tokens, its heads cut to kModelPrefillMaxFlops.
inline constexpr double kModelCaseMaxFlops = 1073741824.0;  // 2^30
inline constexpr int kModelCaseMinKeys = 256;
inline constexpr int kModelPrefillKeys = 2048;                 // the least power of two a round-length path keys on
inline constexpr double kModelPrefillMaxFlops = 8589934592.0;  // 2^33: 4 query heads over 2 at D 128, 8 at D 64

// A case's classes as its id names them: a length's class and residue ("short:odd"), a batch's
// class, and a head config's class (a config listed in gates.json takes its class; another is
// classed by its ratio: mha, mqa, gqa_pow2, gqa_other).
std::string length_class_name(const SampleSpace& sp, int n);
std::string batch_class_name(const SampleSpace& sp, int n);
std::string head_class_of(const SampleSpace& space, int heads_q, int heads_kv);
// The id of a plain case (256-byte aligned, no gaps: the model calls, value, scale and fused-buffer
// cases) at `at` (its prefix and index): every dimension named as a sampled case's id names it, so
// a failure says what the case had; the caller appends what the case is ("/model=", "/values=").
std::string plain_case_id(const SampleSpace& space, const std::string& at, const Shape& s, const std::string& layout,
                          const std::string& junk, const std::string& scale, const std::string& inputs);

// A fresh seed from the OS's entropy source.
uint32_t draw_gate_seed();
// Parses --gate-seed: a decimal integer in [0, 2^32); throws usage_error naming the value.
uint32_t parse_gate_seed(const std::string& text);

// The cheap tier's cases for the task ("sampled/..."): each within the space's element and FLOP
// bounds, each id naming every dimension's value.
std::vector<CaseSpec> draw_sampled_cases(const GatesConfig& gates, const Task& task, uint32_t seed);
// The deep tier's ("deep/..."), without the fixed sets it adds (gates.json "deep_gate").
std::vector<CaseSpec> draw_deep_cases(const GatesConfig& gates, const Task& task, uint32_t seed);

// The space a tier of the task draws from: the tier's lengths and bounds, and only the input
// distributions that apply to the task's dtype (InputDistribution::dtypes).
SampleSpace tier_space(const GatesConfig& gates, const Task& task, const CoverageTier& tier);

bool is_sampled_case(const std::string& case_id);  // the cheap tier's
bool is_deep_case(const std::string& case_id);     // the deep tier's

}  // namespace evo
