// The parent <-> worker contract. The parent writes a job file and starts
// `evo __worker JOB` (under compute-sanitizer for `evo run --sanitize`); the worker reports
// progress as JSON lines on stdout and, between the gate and timing, waits for "continue" or
// "stop" on stdin. Only the parent writes records.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compile/cubin.h"
#include "core/shape.h"
#include "core/task.h"
#include "policy/config.h"

namespace evo {

// One set of inputs on one shape, and where the worker writes the output it produced
// (logical BHSD order, raw dtype for candidates, FP32 for the reference).
struct CaseSpec {
  std::string id;
  Shape shape;
  unsigned seed = 0;
  std::string inputs = "normal";  // distribution name
  double qk_std = 1, v_std = 1;
  std::string out_path;
  // Sampled cases (gates.json "sampled") also vary these; the defaults are the fixed sets'.
  double q_mean = 0, outlier_every = 0, outlier_scale = 1, k_sink = 0;  // see InputDistribution
  double v_mean = 0;                                                    // likewise
  double scale = 0;                                                     // softmax scale; 0 means 1/sqrt(D)
  std::string layout;  // "" (the shape's own), packed_qkv, mixed, kv_cache: gpu/case_layout.h
  std::string junk;    // padding and guard bands: "" (fixed cases), finite, nonfinite (gpu/input_fill.h)
  // Sampled cases (the covering rows of both tiers): massive Q and K channels on an input of
  // ordinary V too, not only on large_v (gpu/input_fill.h massive_channels; hacker round 21).
  bool massive_sampled = false;
  // Sampled cases of two or more batches, one in two: odd batches' first shared_prefix rows of K and
  // V repeat the batch before's bit for bit, then differ (gpu/input_fill.h shared_prefix_row; hacker
  // round 22). 0: none.
  int shared_prefix = 0;
  // Hacker round 28's value cases (run/value_cases.h): a pattern of real models' values laid on the
  // inputs (gpu/input_fill.h value_kinds: "massive_1", "v_repeat", "e4m3_kv", ...); "" none.
  std::string values;
  // Sampled cases: launched on two streams at once beside a second problem of other inputs,
  // both outputs checked (a kernel's state shared between launches in flight breaks).
  bool two_streams = false;
  // What the second problem of a two-stream case shares with the first (hacker round 6: they
  // shared nothing, so an input changed in place and restored was never read in flight): "q"
  // its Q is the first's view (its first rows: the same queries over other keys, as cascade
  // attention's two calls), "kv" its K and V are (other queries over one prefix cache); "" none.
  std::string streams_share;
  // Cases too large for host copies (gates.json limits.device_check_elements): the worker
  // hashes the inputs, computes the reference and compares on the GPU with this tolerance, and
  // reports the counts instead of an output file (gpu/device_check.h).
  struct DeviceCheck {
    bool on = false;
    double atol = 0, rtol = 0;
  } device_check;
};

// One benchmark shape (gpu/timing_loop.h). Both cases are checked on the GPU with their
// device_check tolerance; their seeds only start the content: every timed sample draws a new
// counter.
struct BenchSpec {
  std::string id;
  CaseSpec timed;  // the timing loop's distribution (warm-up on its seed's inputs, then fresh ones)
  CaseSpec fresh;  // the post-timing distribution: the last timed sample, or a pruned shape's one launch
};

struct WorkerJob {
  // "reference": FP32 reference outputs; "candidate": gate, await, timing; "sanitize": the
  // cases once each under compute-sanitizer (no guard bands, no poison, no timing).
  std::string mode;
  int device = 0;
  Task task;
  std::string support_cubin;
  std::string cubin;
  LaunchGeometry launch;
  std::vector<CaseSpec> cases;
  std::vector<BenchSpec> bench;
  TimingConfig timing;
  double prune_us = 0;                       // candidate's first bench shape p10 above prune_factor x this: stop timing
  bool dump_inputs = false;                  // reference mode: also write <out>.q/.k/.v (logical BHSD, dtype)
  std::string reference_kernel = "rowwise";  // gates.json limits.reference_kernel
};

nlohmann::json to_json(const WorkerJob& j);
WorkerJob worker_job_from_json(const nlohmann::json& j);
nlohmann::json shape_json(const Shape& s);
Shape shape_from_json(const nlohmann::json& j);

// Bits that mark an output element "never written" in what the worker hands the parent: a NaN
// (fp16 and bf16) that no arithmetic produces. No launch sees them: the worker writes them into
// an output file where both launches of a case left their (different, finite) pre-fills
// (gpu/launch_draws.h), and evo's compare kernels count them.
inline constexpr unsigned short kPoisonBits = 0xFFFF;
// Bytes around every device buffer; a candidate that writes them wrote out of bounds.
inline constexpr size_t kGuardBytes = 64 * 1024;
inline constexpr unsigned char kGuardByte = 0xA5;

int worker_main(const std::string& job_path);

}  // namespace evo
