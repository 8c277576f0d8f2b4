// The shared cases of a tier (run/sampler.cpp draw_tier): one tensor passed as two or three of Q,
// K and V (gpu/case_layout.h "+qk", "+kv", "+qv", "+qkv", "+qk_prefix"), made from the tier's
// drawn cases, as a caller that passes one tensor twice does (the domain lets the inputs share
// memory).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"
#include "run/sample_rows.h"

namespace evo {

// One case per shared view: a drawn case (the first from a random one whose shared form fits
// the bounds and shows its weights: shared_case_informative; failing any, the first that fits)
// with one tensor passed twice or thrice, so a kernel keyed on p.q == p.k, p.k == p.v, p.q ==
// p.v or all three runs that path. A view shared with Q needs Hkv = Hq and Sq = Skv (the shorter
// of the two).
void append_shared_cases(const GatesConfig& gates, const Task& task, const SampleRows& rows, SplitMix& rng,
                         const std::string& prefix, std::vector<CaseSpec>& out);

// The shared forms a tier (hacker rounds 24 and 25), after every other case of the tier (the
// in-flight ones included), each from a stream of its own salted by its view and form, so every
// case the tier had keeps its index, its name and its draws: a drawn case (the first from a random
// one, of the `drawn` covering cases, whose V varies and whose values may serve as the view needs:
// values_fit_shared_view; failing all, the first that fits) in the form's shape (its lengths, a
// batch of 3 to 16 sequences, 3 to 8 at a decode step, or one for the ":one" forms, the heads cut
// to kSharedFormMaxFlops), one tensor passed twice or thrice. The kv form is the regime the
// tier's kv case is not in: a decode step (Sq <= kSharedDecodeRows over 256 keys or more) where
// that one is a prefill, a prefill (Sq = Skv, 256 keys or more) where it is a decode step; kv:mla
// is a decode step of one KV head, K = V, under 16 to 128 query heads. Before, one case a view
// could not show a path keyed on aliasing and on a length (shared_qk_short_half_chunks.cu,
// shared_kv_decode_half_chunks.cu), nor Q and K at one address with two lengths
// (shared_qk_base_takes_q_len.cu); round 24's forms kept at most 2 sequences and a random
// source's heads (shared_qk_batched_short_half_chunks.cu, shared_kv_batched_decode_half_chunks.cu,
// shared_kv_mqa_decode_half_chunks.cu).
// `drawn`: the tier's covering cases, out's first; `rng`: the tier's stream, read, not drawn from.
void append_shared_forms(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                         const SplitMix& rng, const std::string& prefix, size_t drawn, std::vector<CaseSpec>& out);

}  // namespace evo
