// gates/gates.json: named shape sets, seeds, input distributions, tolerances, resource caps,
// timing and watchdog limits. Loaded once; every field is validated with a message naming it.
#pragma once
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "core/task.h"
#include "policy/model_shapes.h"
#include "policy/sample_space.h"

namespace evo {

struct Tolerance {
  double atol = 0, rtol = 0, rel_l2 = 0;
  // The largest |signed relative error| (gates/correctness.h OutputCheck::bias) over a case of
  // at least kBiasMinElements checked elements; 0: measured and recorded, not enforced.
  double bias = 0;
  // The key count up to which `bias` holds; past it the bound grows in proportion to the keys
  // (0: flat). fp32 running sums drop the addends below half their ulp, so an honest kernel's
  // bias grows with the row: the shipped fp16 kernels on the H200 (2026-11-30) stayed under
  // 5e-5 on normal, large_logits, outlier_rows and large_v up to 16 384 keys but reached 1.2e-4
  // to 3.6e-4 at 90k to 131k keys, while rounding toward zero sits near -3.5e-4 at any length.
  // Most of that growth was the FP32 reference's own: against the double reference those four
  // inputs stayed within 9.1e-5 up to 131 072 keys (H200, 2026-12-01), so gates.json bounds them
  // flat to 65 536 keys (docs/safety.md, "The bias bound on the double reference").
  long bias_keys = 0;
  // This tolerance for a row of `seq_kv` keys: `bias` scaled past `bias_keys`.
  Tolerance for_keys(long seq_kv) const {
    Tolerance t = *this;
    if (bias_keys > 0 && seq_kv > bias_keys) t.bias = bias * double(seq_kv) / double(bias_keys);
    t.bias_keys = 0;
    return t;
  }
};

struct ResourceCaps {
  int max_registers = 255;
  long max_smem_bytes = 0;
  int max_threads = 1024;
  long max_stack_bytes = 0;
  long max_spill_bytes = 0;
};

// Inputs are mean + std·N(0,1) per element (Q gets q_mean, V v_mean; K and Q qk_std; V v_std). Real
// activations also have outlier query rows (every `outlier_every`-th row, by hash, times
// `outlier_scale`; a scale of 0 makes them padding rows, exactly zero in Q and K alike:
// gpu/input_fill.h, hacker round 9) and attention sinks (key 0 set to `k_sink` in every channel). `dtypes`
// limits a distribution to tasks of those input dtypes (empty: every task): bf16 holds |V| of
// 10^5 and 10^-6, which fp16 cannot. V with a common offset (v_mean) makes P.V grow with the
// row sum, not its square root (hacker round 3: an unnormalised fp16 sum overflows there).
struct InputDistribution {
  std::string name;
  double qk_std = 1.0, v_std = 1.0;
  double q_mean = 0, outlier_every = 0, outlier_scale = 1, k_sink = 0;
  std::vector<std::string> dtypes;
  double v_mean = 0;
  // > 0: Q's mean and the sink key are set per case (set_inputs) so that key 0 scores
  // -sink_score_log2 in the scaled log2 domain and Q·Q' scores +sink_score_log2: a row that sees
  // key 0 alone has every score far below any finite running-max sentinel, while no score is so
  // large that an honest kernel's f32 rounding of it (|score| · 2^-24) moves exp2 by more than a
  // few thousandths. A fixed mean of 4096 scored up to 3·10⁹ at scale 1 (rounding error ±128 in
  // the exponent): honest kernels overflowed fp16 P to Inf (the H200, 2026-11-30).
  double sink_score_log2 = 0;
  // false: a case of this distribution never becomes a K and V one view (run/sampler.cpp). V in
  // the thousands (large_o, huge_o: outputs near the top of the output's range) would make K's
  // values, and so every logit, thousands of times a key's size (hacker round 18).
  bool values_as_keys = true;
  bool applies_to(const std::string& dtype) const {
    return dtypes.empty() || std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
  }
};

struct TimingConfig {
  double warmup_ms = 25;
  int min_samples = 10, max_samples = 400;
  double target_rse = 0.005;
  double shape_budget_ms = 1500;
  double launch_bound_us = 50;
  int graph_launches = 20;
  double prune_factor = 1.5;
  // Timing integrity (docs/safety.md, "Timing integrity"): query rows recomputed and compared on
  // the GPU after every timed sample; timed samples followed by a launch that repeats their
  // inputs (the repeat probes); the pause before the isolated launch that tells a kernel that is
  // wrong on a shape from one that is wrong only when timed.
  int rows_per_sample = 128;
  int repeat_probes = 4;
  double isolation_pause_ms = 100;
  // Rows a "full" check (the drawn sample's, the last one's, a pruned shape's) recomputes, drawn
  // after the launch; 0: every row. Only `evo evolve`'s screen caps it: a full check of a 16k
  // shape recomputes 2.2 TFLOP in the FP32 checker, and ten of them made a screen cost as much as
  // a full evaluation (3.2 GPU-s at fp8-d128 on the H200, 2026-11-30). A screen never enters a
  // population; what does is checked in full.
  long long full_check_rows = 0;
};

struct Limits {
  double compile_s = 60;
  long compile_memory_mb = 4096;
  long source_bytes = 256 * 1024;
  long log_bytes = 64 * 1024;
  double load_s = 30, gate_case_s = 10, timing_shape_s = 30;
  // Gate cases with a buffer of at least this many elements are checked on the GPU
  // (run/large_cases.h); the gate-case watchdog adds their work at these floor rates.
  long long device_check_elements = 1LL << 28;
  double watchdog_host_bytes_per_s = 2e8, watchdog_device_bytes_per_s = 2e10, watchdog_flops_per_s = 2e11;
  // The FP32 reference every check compares with: "tiled" (evo_reference_tiled_*: 16 rows and
  // 32-key tiles a block) or "rowwise" (evo_reference_*: a warp per query row). Their outputs are
  // equal bit for bit (GpuReference.TheTiledReferenceIsTheRowwiseBitForBit, H200 2026-12-03), so
  // the choice moves time only: the tiled one takes 23.7 s of deep tier against 41.6 (gate_cost.sh,
  // 2026-12-03; harness/support/support_kernels.cu).
  std::string reference_kernel = "tiled";
};

// `evo run --sanitize`: the cases a would-be elite runs under each compute-sanitizer tool.
struct SanitizerConfig {
  std::vector<std::string> shape_sets{"small"};  // small and ragged: instrumented runs are slow
  std::vector<int> seeds{0};
  std::string inputs = "normal";  // one of `inputs`
  double tool_s = 300;            // watchdog per phase under the instrumented run
  // With deep_gate.sanitizer (and the deep tier on): up to `deep_cases` cases of the deep tier's
  // covering array also run under each tool, the smallest of each layout and padding kind with
  // at most `deep_max_elements` elements over Q, K, V and O (padding included).
  int deep_cases = 6;
  long long deep_max_elements = 1LL << 22;
};

// The deep tier ("deep_gate"): what a candidate about to enter a top-3 passes first, besides the
// deep sampled cases (SampleSpace::deep): these fixed sets (the huge set: > 2^31 elements; the
// frontier set: each bound of the op's input domain), each with every distribution of `inputs`
// (none: the first of defaults.inputs), all checked on the GPU; when `sanitizer`, a run under
// compute-sanitizer (`evo run --sanitize`) adds the smallest covering-array cases to the
// sanitizer's (SanitizerConfig::deep_cases), so memcheck reads the op's layouts too. `enabled` (off until an H200 call
// regates the committed elites, docs/safety.md): in a run with a gate seed, a candidate whose fitness would enter its
// stage's top 3 passes it in a second worker job after timing (10.6-27.5 s of device checks for
// a stage-7 elite on the H200), so the rest pay nothing. A remeasured elite is a would-be elite: `evo population
// remeasure` re-gates the committed elites through it.
struct DeepGateConfig {
  std::vector<std::string> shape_sets{"huge"};
  // Shape sets run with K's and V's batch stride at 2^31 elements (case layout far_batches), or,
  // for a shape of one batch, their head stride (far_heads), or, for one batch and one KV head,
  // their rows far enough apart that the last lies past 2^31 elements (far_rows): offsets past
  // int32 in a call within the domain's span.
  std::vector<std::string> far_stride_sets;
  std::vector<std::string> inputs;
  // Shape sets of many keys run with `long_key_inputs`: inputs whose error grows with the key
  // count in a kernel that sums short of FP32 (a V with large channel means: once O's partial
  // sum is large, an accumulator of ~13 mantissa bits, Hopper's FP8 wgmma, drops each tile's
  // share; on the H200, 2026-11-30, tma_ws_fp8's error grew linearly from 0.01 at 2k keys to
  // 0.23 at 9k, and the cheap tier's very_long class, drawn in [4097, 16384], passed it below ~5k).
  std::vector<std::string> long_key_sets;
  std::vector<std::string> long_key_inputs;
  bool sanitizer = true;
  bool enabled = false;
};

struct RegressionConfig {
  double confidence = 0.99;
  double min_effect = 0.03;
};

// The numbers behind the verdict rules of gates/verdict.h ("verdict" in gates.json).
struct VerdictPolicy {
  // The repeat probes: launches on the inputs of the timed sample just before them, paired with
  // it. Their median gain over those samples above max(repeat_z x its standard error, from the
  // timed samples' spread; repeat_min_fraction x the timed median) + repeat_slack_us: the kernel
  // skips work it has seen (a result cache or a replay).
  double repeat_z = 4.0, repeat_min_fraction = 0.05, repeat_slack_us = 1.0;
  double clock_drop_ratio = 0.9;  // SM clock after / before below this: a warning
  double noisy_rse = 0.02;        // a shape's relative standard error above this: a warning
  // The gate's worker is stopped at the first case whose check fails (the verdict is that case's,
  // as now, unless the worker would have died on a later one: then crash is no longer reached).
  // A rejected candidate then costs the cases up to its first failure, not the whole tier; the
  // record's correctness gate says "stopped_at_first_failure" and lists the checks made. Off by
  // default until the adversarial suite's verdicts are confirmed with it on the H200.
  bool stop_at_first_failure = false;
};

// How `evo compare` reads the records (COMPARE.md): the confidence of the ± shown next to ratios
// (two-sided), and the speedup over the previous stage above which a stage is called suspicious.
// Its noisy-timing and clock-drop warnings use VerdictPolicy's thresholds, the same as a run's.
struct ComparePolicy {
  double confidence = 0.95;
  double suspicious_speedup = 10.0;
};

// The spec peaks of one GPU model ("roofline" in gates.json): dense tensor FLOP/s per input
// dtype at the highest SM clock the model boosts to, and the memory bandwidth. No time below
// the floor they give (the FLOPs at the tensor peak, or the bytes at the memory peak) is admitted.
struct RooflinePeaks {
  std::map<std::string, double> tensor_tflops;  // by dtype name: fp16, bf16, fp8
  double memory_tbps = 0;
};

struct GatesConfig {
  std::map<std::string, std::vector<std::string>> shape_sets;  // entries before D/H substitution
  std::vector<std::string> gate_sets, benchmark_sets;
  std::vector<int> seeds;
  std::vector<InputDistribution> inputs;                   // defaults.inputs: the fixed sets' distributions
  std::map<std::string, InputDistribution> distributions;  // every entry of "inputs"
  SampleSpace sampled;                                     // "sampled": drawn per run with the run's gate seed
  long post_timing_seed = 1000003;
  std::vector<std::string> post_timing_inputs{"normal"};  // fresh inputs of bench shape i: entry i mod n
  std::map<std::string, Tolerance> tolerances;            // by dtype name
  std::map<std::string, std::map<std::string, Tolerance>> input_tolerances;  // dtype -> inputs -> override
  std::map<std::string, ResourceCaps> resources;                             // by arch
  TimingConfig timing;
  Limits limits;
  RegressionConfig regression;
  SanitizerConfig sanitizer;
  DeepGateConfig deep_gate;
  VerdictPolicy verdict;
  ComparePolicy compare;
  std::map<std::string, RooflinePeaks> roofline;  // by GPU key ("nvidia-h200")
  std::vector<ModelShape> model_shapes;           // the `models` set (policy/model_shapes.h)

  // Expands set names or explicit BxHqxHkvxSqxSkvxD entries (comma separated) for a task;
  // "models" gives the model shapes of the task's head dim and mask.
  std::vector<Shape> shapes(const std::vector<std::string>& sets_or_dims, const Task& task) const;
  const Tolerance& tolerance(const Task& task) const;
  // The dtype's tolerance for one input distribution (its calibrated override, if any).
  const Tolerance& tolerance(const Task& task, const std::string& inputs) const;
  const ResourceCaps& caps(const std::string& arch) const;        // throws usage_error for unknown arch
  const InputDistribution& input(const std::string& name) const;  // throws usage_error naming it
  // The roofline floor of one launch of `shape` on the GPU `gpu_key`, in µs: the larger of its
  // FLOPs at the tensor peak and its bytes (Q, K, V read once, O written once; causal: only the
  // keys some row sees, Shape::visible_kv) at the memory peak. nullopt when "roofline" has no peaks for that GPU or
  // dtype.
  std::optional<double> floor_us(const std::string& gpu_key, const Task& task, const Shape& shape) const;
};

GatesConfig load_gates_config(const std::filesystem::path& file);
GatesConfig parse_gates_config(const std::string& json_text, const std::string& origin);

}  // namespace evo
