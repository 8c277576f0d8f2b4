// The timing of one benchmark shape (docs/safety.md, "Timing integrity"). Every timed sample
// does the work on inputs no launch has seen: between samples, outside the timed window and
// before the L2 flush, the inputs are generated again on the GPU with a counter drawn at run
// time and O is pre-filled with finite values (gpu/launch_draws.h). After each sample evo's
// kernels hash the inputs again and recompute query rows drawn at run time; the sample at an
// index drawn at run time, and the last (one more after the loop's stop rule, on inputs of the
// post-timing distribution), are compared element by element with evo's reference. A few
// samples are followed by a launch that repeats their inputs (the repeat probes), so a kernel
// that runs faster on what it has seen shows it. Warm-up launches drawn at run time are verified
// too. The loop reports facts (gpu/timing_facts.h); the parent decides.
#pragma once
#include <cuda.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/stats.h"
#include "gpu/device_checker.h"
#include "gpu/launch_draws.h"
#include "gpu/timing_facts.h"
#include "gpu/worker_device.h"
#include "gpu/worker_protocol.h"

namespace evo {

// What the loop uses of the worker: its stream, events, L2 flush buffer and checker, and the
// candidate's launch.
struct TimingRig {
  const WorkerJob& job;
  const worker_device::Support& support;
  const DeviceChecker& checker;
  CUstream stream;
  CUevent e0, e1;
  CUdeviceptr flush;
  size_t flush_bytes;
  // The candidate's parameters for the problem's current inputs (TMA maps, fp8 descales).
  std::function<worker_device::Params()> params;
  std::function<void(worker_device::Params&)> launch;
  LaunchDraws& draws;  // the worker's: every launch's pre-fill, and which warm-ups are verified
};

struct ShapeTiming {
  SampleStats stats;  // over the timed samples (fresh inputs each)
  // warmup_launches, sm_clock_before_mhz, sm_clock_after_mhz; back_to_back_us and graph_us for
  // launch-bound shapes (repeated inputs, never in the fitness).
  nlohmann::json extra = nlohmann::json::object();
  TimingFacts facts;
  std::optional<FullCheck> checked;  // the last sample (post-timing distribution): the benchmark's post_done
};

// Times bench `b` on `p` (allocated, filled with b.timed's inputs); stops at the first sample
// whose check fails, after one isolated launch that tells the parent whether the kernel is wrong
// on the shape or only when timed.
ShapeTiming time_shape(const TimingRig& rig, worker_device::Problem& p, const BenchSpec& b);

// A shape that is not timed (pruned): one launch on fresh inputs of b.fresh's distribution,
// compared element by element with evo's reference.
FullCheck check_shape(const TimingRig& rig, worker_device::Problem& p, const BenchSpec& b);

}  // namespace evo
