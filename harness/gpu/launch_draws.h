// What O holds before each launch of a candidate, and which launches evo verifies: both drawn
// in the worker at run time, so no launch whose output is checked can be told apart from one
// whose output is not (docs/safety.md §3f). Before every launch, gated or timed, O holds what a
// caller's output buffer may hold: normal values of a spread drawn per launch (evo_fill's
// generator with a counter drawn at run time), all +0.0, stale non-finite content (Inf or NaN, as
// torch.empty's stale bits are one time in 32), or, before a timed sample, the previous sample's
// output of other inputs. Never a value only checked launches see: each kind is drawn with the
// same odds before every kind of launch, and the poison (0xFFFF) is gone from every launch but
// the sanitizer's, which writes nothing at all.
//
// "Every element written" is then proven by two launches over different pre-fills: an element
// the kernel leaves alone keeps its pre-fill, which differs between the two (so the outputs
// differ bitwise) and is far from the reference. Warm-up launches, which used to go unchecked,
// are verified at run-time-drawn places among hundreds of launches; every timed sample is.
// No CUDA here: the draws are tested on the CPU (tests/unit/launch_draws_test.cpp).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "core/shape.h"
#include "core/splitmix.h"
#include "gpu/input_fill.h"

namespace evo {

// Every launch of the candidate in a worker, by what it is for.
enum class LaunchKind {
  gate_primer,   // before a split kernel's gate case, on other inputs at the case's addresses
  gate_first,    // a gate case's first launch
  gate_second,   // its second (the pre-fill differs: every element written, bitwise equal)
  warm_up,       // before a shape's timed samples, on the case's own inputs
  timed,         // a timed sample, fresh inputs
  probe_repeat,  // a repeat probe: the sample's inputs again
  isolated,      // after a failed sample: fresh inputs after a pause
  shape_check,   // a pruned shape's one launch
  concurrent,    // a gate case's launch on a second stream, in flight beside the first
};

// What O holds when the candidate is launched.
struct Prefill {
  bool keep_previous = false;  // the previous timed sample's output (other inputs): nothing written
  unsigned seed = 0;           // else evo_fill's normal values: its seed, counter and spread
  uint64_t nonce = 1;
  // 0 (one launch in kZeroOdds): every element +0.0, as zeroed memory holds. One launch in
  // kStaleOdds of the rest is stale: a third of those kStaleSpread, normal values times 3e38, so
  // +-Inf in fp16 and Inf or values near the largest float in bf16 (Inf times an exact 0 of the
  // cosine is NaN); a third kStaleNaN, every element NaN (hacker round 4); a third stale_bits.
  float stddev = 1;
  // A third of the stale pre-fills are random 16-bit patterns instead (prefill_bits): finite,
  // NaN of any payload, Inf and subnormal elements mixed within a row (hacker round 5: one kind
  // in every element let a kernel judge a row by its first element, and one NaN pattern let it
  // guard against that pattern alone). The other two thirds: kStaleSpread and kStaleNaN.
  bool stale_bits = false;
  // A split workspace's partials as the previous launch left them, not refreshed with stale
  // content: a gate case's second launch, over the workspace its first left, as a package's next
  // call runs (GateSideEffects; hacker round 8: a count kept in the partials restarted at every
  // gate launch); and a first launch right after a primer, over what a launch on other inputs at
  // the same addresses left (hacker round 9: a memo of partials keyed on the call, not on its
  // content, was right on the second launch's repeated inputs); and a primer right after a
  // primer, over what one of another split count left (hacker round 13).
  bool keep_partials = false;
};

class LaunchDraws {
 public:
  explicit LaunchDraws(uint64_t key) : rng_{key} {}

  // The pre-fill of the next launch of `kind`; counts the launch.
  Prefill prefill(LaunchKind kind);
  // Whether the launch just counted is verified: every launch but warm-ups and primers, and a
  // warm-up with probability 1/kWarmUpOdds, drawn now.
  bool verify(LaunchKind kind);
  // Launches of the candidate in this process so far.
  uint64_t launches() const { return launches_; }
  // A counter for evo_fill (odd, so never the fixed cases' 0) drawn now: a primer's inputs, content
  // no launch has seen.
  uint64_t fresh_inputs() { return rng_.next() | 1; }
  // The split count of a split case's primer, drawn now: any count from 2 to the kernel's
  // `kv_splits_max` and the call's KV `blocks` (so no split of a call without empty splits is
  // empty) but the case's own `splits`; `splits` when there is no other. A package's workspace holds the
  // partials of earlier calls of every shape, laid out for their own split and tile counts (hacker
  // round 13: with the primer at the case's own count, a slot that an empty split of the case never
  // writes was never written by any launch, so a combine trusting a flag it never clears was exact).
  int primer_splits(int splits, long long kv_splits_max, long long blocks);
  // The query and key lengths (Sq, Skv) of a split case's primer of another shape, drawn now: each
  // up to the case's (`s`: fewer rows through the same buffers) and not both the case's, with as
  // many KV blocks of `block` keys as `splits` (evo_num_splits' promise; causal: up to Sq keys a
  // row); the case's own when it has no other. It runs at the case's split count, as an
  // earlier call of another shape that the package split as this one leaves the workspace: its
  // tiles lie at the case's slots (hacker round 14: with every launch at the case's count having
  // the case's shape, a written-slot flag that carried the split count was exact).
  std::pair<int, int> primer_lengths(const Shape& s, int splits, int block, bool causal);

  static constexpr int kWarmUpOdds = 8;
  // One pre-fill in kZeroOdds is all +0.0 (fresh memory, torch.zeros, a zeroed workspace), so a
  // kernel that takes a zeroed output as already done is seen to skip it.
  static constexpr int kZeroOdds = 8;
  // One pre-fill in kStaleOdds (of those not zero) is stale non-finite content (hacker round 3,
  // §3g: a kernel that merges its result into O as O * 0 + new is exact on finite O only).
  // 4 since hacker round 5 (8 before): a third of the stale pre-fills are now random bit patterns;
  // each of the three kinds comes before about one launch in 14 (7/96).
  static constexpr int kStaleOdds = 4;
  static constexpr float kStaleSpread = 3.0e38f;
  // Half the stale pre-fills are NaN bit patterns (evo_fill's normal times NaN): torch.empty's
  // stale bits are NaN about 31 times as often as Inf in fp16, and a kernel that guarded O * 0 +
  // new against Inf only passed every +-Inf pre-fill (merges_stale_o_inf_guard.cu, hacker round 4).
  static constexpr float kStaleNaN = std::numeric_limits<float>::quiet_NaN();

 private:
  SplitMix rng_;
  uint64_t launches_ = 0;
  LaunchKind last_ = LaunchKind::gate_first;  // the kind of the launch counted last
};

// One launch's output and the pre-fill it replaced, in logical BHSD order (2 bytes an element).
struct UnwrittenEvidence {
  std::string prefill, out;
};

// The first launch's output with kPoisonBits (gpu/worker_protocol.h) at the elements the kernel
// provably never wrote: where the two pre-fills differ and each launch's output still holds its
// own. The parent counts those as unwritten. A written element is never marked (it would have to
// equal two different values); an element left alone where the pre-fills happen to agree is not
// marked either, and fails the comparison with the reference instead.
std::string mark_unwritten(const UnwrittenEvidence& first, const UnwrittenEvidence& second);

// What a split workspace's partials (evo_launch.h: past the tile counters) hold before a launch
// with this pre-fill, as a 32-bit pattern repeated: NaN (0xFFFFFFFF) or a finite float from 1 to
// 64, drawn with the pre-fill. A package reuses one workspace across calls, so a launch finds
// earlier calls' partials there; the gate's fresh zeroed workspace hid a kernel that read a slot
// it never wrote (hacker round 3, split_skips_empty_partial.cu).
uint32_t stale_partial_bits(const Prefill& f);
// Unless that pattern is NaN, the partials then hold finite values varied word by word: evo_fill's
// bf16 values (tensor kStalePartialTensor, these parameters: about the pattern's value, spread a
// quarter of it) read as 32-bit words, each word a float near its high half's value. A package's
// workspace holds earlier calls' partials, no two words alike (hacker round 5: a combine that
// skipped a slot whose max and sum were equal was exact on the one pattern).
inline constexpr unsigned kStalePartialTensor = 8;
FillParams stale_partial_fill(const Prefill& f);
// The 32-bit word `word` of that fill, as the worker's GPU writes it (evo_fill_bf16 on the host).
uint32_t stale_partial_word(const Prefill& f, uint64_t word);

// Element `index` (logical BHSD) of a random pre-fill, before rounding to O's type: evo_fill's
// normal (support_kernels.cu, tensor 3, no mean, outliers or sink), computed on the host.
float prefill_value(const Prefill& p, uint64_t index);
// Element `index` of a stale-bits pre-fill (Prefill::stale_bits): evo_fill_bits16's 16-bit pattern.
uint16_t prefill_bits(const Prefill& p, uint64_t index);
// evo_normal of support_kernels.cu on the host: element `index` of tensor `tensor`'s normal values.
float evo_normal_host(uint64_t index, unsigned seed, unsigned tensor, float stddev);

}  // namespace evo
